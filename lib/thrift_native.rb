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

  # Tells the extension when Ruby code changes one of its native methods on a class whose fast path relies on
  # them, so that it falls back to calling the Ruby method (as RSpec's `allow_any_instance_of` or a monkey patch
  # expect).
  module FastPathGuard
    def method_added(name)
      ThriftNative.__send__(:native_method_changed, self, name)
      super
    end

    def method_removed(name)
      ThriftNative.__send__(:native_method_changed, self, name)
      super
    end

    def method_undefined(name)
      ThriftNative.__send__(:native_method_changed, self, name)
      super
    end

    def prepend(*modules)
      modules.each { |m| m.instance_methods(true).each { |name| ThriftNative.__send__(:native_method_changed, self, name) } }
      super
    end
  end

  class << self
    private

    # The extension decides which names matter (FramedTransport's native methods rely on its private read_frame).
    def native_method_changed(klass, name)
      method_changed(klass, name.to_s) if NATIVE_METHODS.key?(klass) || RELIED_ON.include?(klass)
    end
  end

  # Classes none of whose methods are ours but whose behaviour the struct codec reproduces natively: JsonProtocol, its
  # contexts, its lookahead reader and BaseProtocol (its `skip`); with thrift master, HeaderProtocol and the pure-Ruby
  # BinaryProtocol it delegates to.
  HEADER = defined?(::Thrift::HeaderTransport) && NATIVE_METHODS.key?(::Thrift::HeaderTransport)
  JSON_CLASSES = [
    ::Thrift::JsonProtocol, ::Thrift::JSONContext, ::Thrift::JSONPairContext, ::Thrift::JSONListContext,
    ::Thrift::LookaheadReader, ::Thrift::BaseProtocol
  ].freeze
  RELIED_ON = (JSON_CLASSES + (HEADER ? [::Thrift::HeaderProtocol, ::Thrift::BinaryProtocol] : [])).freeze
  private_constant :JSON_CLASSES
  private_constant :HEADER
  private_constant :RELIED_ON

  ::Thrift::MemoryBufferTransport.singleton_class.prepend(FastPathGuard)
  ::Thrift::FramedTransport.singleton_class.prepend(FastPathGuard)
  ::Thrift::BufferedTransport.singleton_class.prepend(FastPathGuard)
  ::Thrift::BinaryProtocolAccelerated.singleton_class.prepend(FastPathGuard)
  ::Thrift::CompactProtocol.singleton_class.prepend(FastPathGuard)
  JSON_CLASSES.each { |klass| klass.singleton_class.prepend(FastPathGuard) }

  # HeaderTransport's ZLIB transform is native while Zlib::Inflate and Zlib::Deflate are as loaded; a mock of
  # `Zlib::Inflate.new` (or any change to their methods) sends that direction back through Zlib.
  module ZlibGuard
    %i[method_added method_removed method_undefined singleton_method_added singleton_method_removed
       singleton_method_undefined].each do |hook|
      define_method(hook) do |name|
        ThriftNative.__send__(:zlib_changed, self)
        super(name)
      end
    end
  end

  # thrift master's THeader classes, where the loaded thrift has them.
  if HEADER
    ::Thrift::HeaderTransport.singleton_class.prepend(FastPathGuard)
    [::Thrift::HeaderProtocol, ::Thrift::BinaryProtocol].each { |klass| klass.singleton_class.prepend(FastPathGuard) }
    [::Zlib::Inflate, ::Zlib::Deflate].each { |klass| klass.singleton_class.prepend(ZlibGuard) }
  end
end
