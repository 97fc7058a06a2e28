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
