# frozen_string_literal: true

require "rbconfig"

# The names of the extension's library: the one cargo builds for this platform (a cdylib is lib*.so on Linux,
# lib*.dylib on macOS, *.dll on Windows) and the one Ruby loads (`thrift_native.` + DLEXT: .so, .bundle, ...).
# And how cargo builds it. Shared by extconf.rb (gem install) and the Rakefile (rake compile).
module CargoLibrary
  # A shared library on every musl target: rustc links rustup's *-unknown-linux-musl targets statically by default
  # (crt-static) and then refuses a cdylib ("cannot produce cdylib ... does not support these crate types"), while
  # a Ruby extension must share the Ruby's libc.so (Alpine's own rustc defaults to that already). cargo joins it with
  # the target rustflags of the user's configuration, and ignores it, as it ignores those, where RUSTFLAGS is set.
  MUSL_SHARED = %(target.'cfg(target_env = "musl")'.rustflags = ["-C", "target-feature=-crt-static"])

  module_function

  # `cargo build` of the extension's release library.
  def cargo_build_args
    ["build", "--release", "--lib", "--locked", "--config", MUSL_SHARED]
  end

  def built_name(host_os = RbConfig::CONFIG["host_os"])
    case host_os
    when /darwin/ then "libthrift_native.dylib"
    when /mswin|mingw|cygwin/ then "thrift_native.dll"
    else "libthrift_native.so"
    end
  end

  def loaded_name
    "thrift_native.#{RbConfig::CONFIG["DLEXT"]}"
  end
end
