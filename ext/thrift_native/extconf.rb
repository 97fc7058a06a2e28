# Writes a Makefile that builds the Rust extension with cargo. Neither the rb_sys gem nor rake-compiler is needed:
# RubyGems runs this, then `make` and `make install` with its own sitearchdir. cargo builds for its host's target (on
# Alpine, musl's), or for CARGO_BUILD_TARGET where that is set (then the library is in target/<triple>/release/).
require "mkmf"
require "rbconfig"
require "shellwords"
require_relative "cargo_library"

cargo = ENV.fetch("CARGO", "cargo")
abort "thrift_native needs cargo (Rust) to build its extension" unless find_executable(cargo)

File.write("Makefile", <<~MAKE)
  CARGO = #{cargo}
  export RUBY = #{RbConfig.ruby}
  srcdir = #{__dir__}
  sitearchdir = #{RbConfig::CONFIG["sitearchdir"]}
  target_prefix = /thrift_native
  TARGET_DIR = $(CURDIR)/target
  DLLIB = #{CargoLibrary.loaded_name}

  all: $(DLLIB)

  $(DLLIB): FORCE
  \t$(CARGO) #{Shellwords.join(CargoLibrary.cargo_build_args)} --manifest-path $(srcdir)/Cargo.toml --target-dir $(TARGET_DIR)
  \tcp $(TARGET_DIR)/$(if $(CARGO_BUILD_TARGET),$(CARGO_BUILD_TARGET)/,)release/#{CargoLibrary.built_name} $@

  install: $(DLLIB)
  \tmkdir -p "$(DESTDIR)$(sitearchdir)$(target_prefix)"
  \tinstall -m 0755 $(DLLIB) "$(DESTDIR)$(sitearchdir)$(target_prefix)/$(DLLIB)"
  \trm -rf $(TARGET_DIR)

  clean:
  \trm -f $(DLLIB)

  FORCE:
  .PHONY: all install clean FORCE
MAKE
