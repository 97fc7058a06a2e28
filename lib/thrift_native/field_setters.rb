# frozen_string_literal: true

module ThriftNative
  # Thrift::Struct.field_accessor, with the setter's instance variable name made once, when the setter is defined:
  # the library's setter interpolates "@#{name}" on each call, a String per field set (the client makes one per
  # argument, the processor one per result). Everything else is the library's: `attr_reader`, the type check when
  # `Thrift.type_checking` is on, `instance_variable_set` (which answers and raises alike for the Symbol and the
  # String of one name).
  #
  # Only over the method this was written against (0.14 to master have the same one), compared by its source; a
  # thrift whose field_accessor differs keeps its own. Struct classes defined before thrift_native loaded keep the
  # setters they have.
  module FieldSetters
    # The library's method, one statement per line, whitespace and quotes normalized.
    LIBRARY_SOURCE = <<~RUBY.lines.map(&:strip).freeze
      def self.field_accessor(klass, field_info)
      field_name_sym = field_info[:name].to_sym
      klass.send :attr_reader, field_name_sym
      klass.send :define_method, "\#{field_info[:name]}=" do |value|
      Thrift.check_type(value, field_info, field_info[:name]) if Thrift.type_checking
      instance_variable_set("@\#{field_name_sym}", value)
      end
      end
    RUBY

    def field_accessor(klass, field_info)
      field_name_sym = field_info[:name].to_sym
      klass.send :attr_reader, field_name_sym
      ivar = :"@#{field_name_sym}"
      klass.send :define_method, "#{field_info[:name]}=" do |value|
        Thrift.check_type(value, field_info, field_info[:name]) if Thrift.type_checking
        instance_variable_set(ivar, value)
      end
    end

    # True when `method`'s source is LIBRARY_SOURCE.
    def self.library_method?(method)
      file, line = method.source_location
      return false unless file && line && File.file?(file)

      body = File.foreach(file).drop(line - 1).first(LIBRARY_SOURCE.size)
      body.map { |l| l.strip.tr("'", '"') } == LIBRARY_SOURCE
    rescue SystemCallError, IOError
      false
    end
  end
  private_constant :FieldSetters

  if FieldSetters.library_method?(Thrift::Struct.method(:field_accessor))
    Thrift::Struct.singleton_class.prepend(FieldSetters)
    # Where the setters above are defined, read off a probe class's: a setter with this source location is ours.
    probe = Class.new
    FieldSetters.instance_method(:field_accessor).bind_call(Thrift::Struct, probe, { name: "probe" })
    FieldSetters.const_set(:SETTER_SOURCE, probe.instance_method(:probe=).source_location.freeze)
  end

  # For the extension (struct_codec/owners.rs): whether each field in `names` has, on `klass`, the setter
  # FieldSetters#field_accessor defines, which only type-checks (when Thrift.type_checking) and sets the instance
  # variable: the native client sets it itself where it would call that setter.
  def self.plain_setters?(klass, names)
    source = FieldSetters.const_defined?(:SETTER_SOURCE, false) && FieldSetters::SETTER_SOURCE
    return false unless source

    names.all? do |name|
      setter = :"#{name}="
      (klass.method_defined?(setter) || klass.private_method_defined?(setter)) &&
        klass.instance_method(setter).source_location == source
    end
  end
  private_class_method :plain_setters?
end
