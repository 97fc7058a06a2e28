# frozen_string_literal: true

# thrift_native: a Rust drop-in for Apache Thrift's C accelerator.
#
#   require "thrift_native"   # loads thrift, then replaces its accelerated methods with ours
#
# thrift's own lib/thrift.rb ends with `require "thrift_native"`, so with this gem first on the load path (a Gemfile,
# or `gem "thrift_native"`), `require "thrift"` alone loads it too. `ThriftNative.active?` tells whether every
# accelerated method is ours.

# Loaded from thrift.rb's last line, Thrift is already complete; requiring "thrift" again would be circular.
unless defined?(::Thrift::MemoryBufferTransport) && defined?(::Thrift::Union)
  begin
    require "thrift"
  rescue LoadError => e
    raise LoadError, "thrift_native needs the thrift library (the thrift gem, or Debian's ruby-thrift): #{e.message}"
  end
end

require "rbconfig"
require_relative "thrift_native/version"
# The precompiled platform gem holds one extension per Ruby minor version (lib/thrift_native/3.1/, 3.3/, ..., each
# built against that Ruby), and so does a work tree (`rake compile` with each Ruby); the installed source gem holds
# the one `gem install` built, in lib/thrift_native/.
precompiled = Dir[File.join(__dir__, "thrift_native", "*", "thrift_native.#{RbConfig::CONFIG["DLEXT"]}")]
if precompiled.empty?
  require_relative "thrift_native/thrift_native"
else
  ruby = RUBY_VERSION[/\A\d+\.\d+/]
  ours = precompiled.find { |path| File.basename(File.dirname(path)) == ruby }
  unless ours
    built = precompiled.map { |path| File.basename(File.dirname(path)) }.sort.join(", ")
    raise LoadError, "this precompiled thrift_native holds extensions for Ruby #{built}, not #{ruby}: " \
                     "install the source gem (gem install thrift_native --platform ruby), which builds with cargo"
  end
  require ours
end
require_relative "thrift_native/gzip_writer"
require_relative "thrift_native/gzip_reader"
require_relative "thrift_native/field_setters"
require_relative "thrift_native/explain"

module ThriftNative
  # The native methods as they were right after loading: { Class => { name => UnboundMethod } }.
  LOADED_METHODS = NATIVE_METHODS.to_h do |klass, names|
    [klass, names.to_h { |name| [name, klass.instance_method(name)] }]
  end.freeze
  # Internals: the methods the extension defined ({Class => [names]}) and as they were at load time.
  private_constant :NATIVE_METHODS, :LOADED_METHODS

  class << self
    # "Class#method" for each accelerated method that is no longer ours (redefined in Ruby, or replaced by another
    # accelerator loaded later). Empty when thrift_native is the active accelerator.
    def replaced_methods
      LOADED_METHODS.flat_map do |klass, methods|
        methods.filter_map do |name, loaded|
          current = klass.instance_method(name) if klass.method_defined?(name) || klass.private_method_defined?(name)
          # A native method has no source location; a Ruby one defined over ours (or instead of it) has one.
          "#{klass}##{name}" unless current == loaded && current.source_location.nil?
        end
      end
    end

    # True when every accelerated method is thrift_native's.
    def active?
      replaced_methods.empty?
    end
  end

  # Tells the extension when Ruby code changes a method of a class whose fast path relies on it (ext/thrift_native/
  # src/ruby/guard.rs decides which changes matter), so that the fast path falls back to calling the Ruby method, as
  # RSpec's `allow_any_instance_of` or a monkey patch expect.
  module FastPathGuard
    def method_added(name)
      ThriftNative.__send__(:method_changed, self, name.to_s)
      super
    end

    def method_removed(name)
      ThriftNative.__send__(:method_changed, self, name.to_s)
      super
    end

    def method_undefined(name)
      ThriftNative.__send__(:method_changed, self, name.to_s)
      super
    end

    # Reported before (a fast path must stop relying on the class) and after (a check made meanwhile, by another
    # thread, must be made again with the module in place).
    def prepend(*modules)
      FastPathGuard.report(self, modules)
      super.tap { FastPathGuard.report(self, modules) }
    end

    # A module included later comes before the modules included earlier (Thrift::Struct, Thrift::Struct_Union).
    def include(*modules)
      FastPathGuard.report(self, modules)
      super.tap { FastPathGuard.report(self, modules) }
    end

    def self.report(klass, modules)
      modules.each do |m|
        next unless m.is_a?(Module) # Ruby's own TypeError follows

        (m.instance_methods(true) + m.private_instance_methods(true)).each do |name|
          ThriftNative.__send__(:method_changed, klass, name.to_s)
        end
      end
    end
  end

  # Struct classes include Thrift::Struct (unions subclass Thrift::Union and inherit its hooks), service clients
  # Thrift::Client: their method changes are reported too, for the native methods' checks that a class keeps the
  # library's methods (struct_codec/owners.rs, rpc/client/own.rs). A module that includes either passes the hook on
  # to the classes that include it.
  module IncludedGuard
    def included(base)
      if base.is_a?(Class)
        IncludedGuard.watch(base)
      else
        base.singleton_class.prepend(IncludedGuard)
      end
      super
    end

    def self.watch(klass)
      klass.singleton_class.prepend(FastPathGuard) unless klass.frozen?
    end
  end

  # For the extension (struct_codec/owners.rs): whether `klass`'s `validate` is a Ruby method that takes nothing and
  # does nothing (`def validate; end`, what the compiler generates for a struct with nothing to check: its
  # instructions are `putnil; leave`), so that calling it may be left out while the class keeps it.
  def self.empty_validate?(klass)
    method = klass.instance_method(:validate)
    return false unless method.parameters.empty? && defined?(RubyVM::InstructionSequence)

    iseq = RubyVM::InstructionSequence.of(method)
    !iseq.nil? && iseq.to_a.last.grep(Array) == [[:putnil], [:leave]]
  rescue NameError, TypeError
    false
  end
  private_class_method :empty_validate?

  # The same for singleton methods, for classes whose native stand-in a mock of a class method must reach
  # (`Zlib::Inflate.new`, for HeaderTransport's ZLIB transform).
  module SingletonGuard
    %i[singleton_method_added singleton_method_removed singleton_method_undefined].each do |hook|
      define_method(hook) do |name|
        ThriftNative.__send__(:method_changed, self, name.to_s)
        super(name)
      end
    end
  end
  private_constant :FastPathGuard, :SingletonGuard, :IncludedGuard

  # The classes the extension's fast paths rely on, as it registered them.
  __send__(:watched_classes).each do |klass, singleton_methods_too|
    klass.singleton_class.prepend(FastPathGuard)
    klass.singleton_class.prepend(SingletonGuard) if singleton_methods_too
  end
  Thrift::Struct.singleton_class.prepend(IncludedGuard)
  Thrift::Client.singleton_class.prepend(IncludedGuard)
  # Struct and client classes defined before this file loaded.
  below = Module.instance_method(:<) # the classes' own `<` (Comparable's, say) is not asked
  ObjectSpace.each_object(Class) do |c|
    next if c.singleton_class?

    IncludedGuard.watch(c) if below.bind_call(c, Thrift::Struct) || below.bind_call(c, Thrift::Client)
  end
end
