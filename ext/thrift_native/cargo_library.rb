# frozen_string_literal: true

require "rbconfig"

# The names of the extension's library: the one cargo builds for this platform (a cdylib is lib*.so on Linux,
# lib*.dylib on macOS, *.dll on Windows) and the one Ruby loads (`thrift_native.` + DLEXT: .so, .bundle, ...).
# Shared by extconf.rb (gem install) and the Rakefile (rake compile).
module CargoLibrary
  module_function

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
