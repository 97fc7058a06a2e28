# frozen_string_literal: true

module CodecTest
  UUID_TYPE = 16 # Thrift::Types::UUID on thrift >= 0.23; 0.14 lacks the constant

  # UUID fields written by hand: Debian's thrift compiler (0.17) has no `uuid` type in IDL.
  class WithUuid
    include ::Thrift::Struct
    include ::Thrift::Struct_Union
    FIELDS = {
      1 => { type: UUID_TYPE, name: "id" },
      2 => { type: ::Thrift::Types::LIST, name: "ids", element: { type: UUID_TYPE } },
      3 => { type: ::Thrift::Types::I32, name: "n" }
    }.freeze
    def struct_fields = FIELDS
    def validate; end
    ::Thrift::Struct.generate_accessors self
  end

  # A struct with an initialize of its own: the codec must call `new` for it.
  class Counted
    include ::Thrift::Struct
    include ::Thrift::Struct_Union
    FIELDS = { 1 => { type: ::Thrift::Types::I32, name: "n", default: 4 } }.freeze
    def struct_fields = FIELDS
    def validate; end
    ::Thrift::Struct.generate_accessors self

    class << self
      attr_accessor :instances
    end
    self.instances = 0

    def initialize(*args)
      self.class.instances += 1
      super
    end
  end

  class HoldsCounted
    include ::Thrift::Struct
    include ::Thrift::Struct_Union
    FIELDS = { 1 => { type: ::Thrift::Types::STRUCT, name: "counted", class: Counted } }.freeze
    def struct_fields = FIELDS
    def validate; end
    ::Thrift::Struct.generate_accessors self
  end
end

module CodecTypes
  # A new struct class of ten fields, five of them with defaults (scalars and Strings, one frozen), as the issue's
  # `Struct.new` benchmark has it: a fresh class per call, for specs that change one.
  def self.ten_fields_class(name = "TenFields")
    Class.new do
      include ::Thrift::Struct
      include ::Thrift::Struct_Union
      t = ::Thrift::Types
      const_set(:FIELDS, {
        1 => { type: t::I32, name: "a" }, 2 => { type: t::STRING, name: "b" },
        3 => { type: t::I32, name: "c", default: 3 }, 4 => { type: t::I64, name: "d", default: 2**70 },
        5 => { type: t::STRING, name: "e", default: "five" }, 6 => { type: t::BOOL, name: "f", default: false },
        7 => { type: t::DOUBLE, name: "g", default: 7.5 }, 8 => { type: t::STRING, name: "h" },
        9 => { type: t::I32, name: "i" }, 10 => { type: t::STRING, name: "j", default: "ten".freeze }
      })
      def struct_fields = self.class::FIELDS
      def validate; end
      define_singleton_method(:name) { name }
      ::Thrift::Struct.generate_accessors(self)
    end
  end
end

module CodecTest
  TenFields = CodecTypes.ten_fields_class("CodecTest::TenFields")
end
