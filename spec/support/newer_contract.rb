# frozen_string_literal: true

# `ruby -r spec/support/newer_contract.rb`: thrift master's contract whatever the thrift on the load path. Loads that
# thrift's Ruby library with no accelerator, gives it the traces of master's library that thrift_native's load-time
# probes look at (ext/thrift_native/src/thrift/contract.rs: constants that came with each change, and the pure-Ruby behaviours of the
# methods it has not replaced yet), then loads thrift_native. spec/integration/contract_spec.rb runs the unit specs
# so, making both sides of every version-dependent example run on any thrift.
$LOADED_FEATURES << "thrift_native.so" # thrift.rb's own `require "thrift_native"`: nothing yet
require "thrift"
$LOADED_FEATURES.delete("thrift_native.so")

module Thrift
  { BinaryProtocol => { BYTE_MAX: 127 }, Types => { UUID: 16 }, CompactProtocol => { I16_MAX: 32_767, MAX_VARINT32_BYTES: 5, MAX_VARINT32_LAST_BYTE: 0x0f },
    BaseProtocol => { MAX_CONTAINER_SIZE: 2**31 - 1 }, TransportException => { NEGATIVE_SIZE: 5 } }.each do |scope, constants|
    constants.each { |name, value| scope.const_set(name, value) unless scope.const_defined?(name, false) }
  end

  # master's pure Ruby raises these (THRIFT-6126, 6102, 6099: `read` of a negative length); thrift_native replaces
  # the last two methods.
  compact_types = CompactProtocol::CompactTypes
  get_ttype = compact_types.method(:get_ttype)
  compact_types.define_singleton_method(:get_ttype) do |compact_type|
    get_ttype.call(compact_type)
  rescue RuntimeError
    raise ProtocolException.new(ProtocolException::INVALID_DATA, "Unknown compact type: #{compact_type & 0x0f}")
  end
  CompactProtocol.define_method(:read_message_begin) do
    raise ProtocolException.new(ProtocolException::BAD_VERSION, "Expected protocol id")
  end
  memory_read = MemoryBufferTransport.instance_method(:read)
  MemoryBufferTransport.define_method(:read) do |len|
    raise TransportException.new(TransportException::NEGATIVE_SIZE, "Negative size") if len.negative?

    memory_read.bind_call(self, len)
  end

  # master's JsonProtocol raises ProtocolException for a type it has no name for.
  JsonProtocol.define_method(:get_type_name_for_type_id) do |id|
    raise ProtocolException.new(ProtocolException::INVALID_DATA, "Unknown type id: #{id}")
  end

  # master's JsonProtocol reads strings as UTF-8 (THRIFT-6130's trace: its private decode_json_string).
  JsonProtocol.define_method(:decode_json_string) { |str| str.force_encoding(Encoding::UTF_8) }
  JsonProtocol.send(:private, :decode_json_string)

  # master's FramedTransport refuses a zero-length frame (THRIFT-6155, after the shared snapshot).
  FramedTransport.class_eval do
    private

    def read_frame
      sz = @transport.read_all(4).unpack1("N")
      raise TransportException.new(TransportException::END_OF_FILE, "Zero-length frame received") if sz.zero?

      @index = 0
      @rbuf = @transport.read_all(sz)
    end
  end

  # master's Struct#read clears what an instance holds first (THRIFT-6124).
  struct_read = Struct.instance_method(:read)
  Struct.define_method(:read) do |iprot, *rest|
    struct_fields.each_value { |info| instance_variable_set(:"@#{info[:name]}", nil) }
    struct_read.bind_call(self, iprot, *rest)
  end
end

require File.expand_path("../../lib/thrift_native", __dir__)
abort "newer_contract.rb: thrift master's contract did not take" unless ThriftNative::THRIFT_FEATURES.slice(*ThriftNative::CONTRACT_FEATURES).values.all?
