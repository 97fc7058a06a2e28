# Writes a Makefile that builds the Rust extension with cargo. Neither the rb_sys gem nor rake-compiler is needed:
# RubyGems runs this, then `make` and `make install` with its own sitearchdir.
require "mkmf"
require "rbconfig"

cargo = ENV.fetch("CARGO", "cargo")
abort "thrift_native needs cargo (Rust) to build its extension" unless find_executable(cargo)

dlext = RbConfig::CONFIG["DLEXT"]
File.write("Makefile", <<~MAKE)
  CARGO = #{cargo}
  export RUBY = #{RbConfig.ruby}
  srcdir = #{__dir__}
  sitearchdir = #{RbConfig::CONFIG["sitearchdir"]}
  target_prefix = /thrift_native
  TARGET_DIR = $(CURDIR)/target
  DLLIB = thrift_native.#{dlext}

  all: $(DLLIB)

  $(DLLIB): FORCE
  \t$(CARGO) build --release --lib --locked --manifest-path $(srcdir)/Cargo.toml --target-dir $(TARGET_DIR)
  \tcp $(TARGET_DIR)/release/libthrift_native.so $@

  install: $(DLLIB)
  \tmkdir -p "$(DESTDIR)$(sitearchdir)$(target_prefix)"
  \tinstall -m 0755 $(DLLIB) "$(DESTDIR)$(sitearchdir)$(target_prefix)/$(DLLIB)"
  \trm -rf $(TARGET_DIR)

  clean:
  \trm -f $(DLLIB)

  FORCE:
  .PHONY: all install clean FORCE
MAKE
