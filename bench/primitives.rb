# frozen_string_literal: true

# One accelerator's primitive reads and writes over a MemoryBufferTransport, with the binary, the compact or the JSON
# protocol (JSON values sit in a list, `["i32",N,...]`, whose header and end each batch reads or writes too: bare
# JSON numbers one after the other would run together).
# Run by bench/run.rb in a child process per accelerator (only one thrift_native can be loaded at a time); prints one
# JSON line per operation.
#   ruby bench/primitives.rb pure|c|c-master|ours [seconds_per_op] [binary|compact|json]
# c-master: the C accelerator of a newer thrift (with UUID support), from THRIFT_MASTER_RB=<apache/thrift>/lib/rb
# whose ext/ you have built (`ruby extconf.rb && make` in it); nothing of it is part of this project.

require "json"
require_relative "batches"

IMPL = ARGV.fetch(0)
SECONDS = Float(ARGV.fetch(1, "0.3"))
PROTOCOL_NAME = ARGV.fetch(2, "binary")
abort "protocol: binary, compact or json" unless %w[binary compact json].include?(PROTOCOL_NAME)
JSON_LIST = PROTOCOL_NAME == "json"

require_relative "../test_support/accelerator"
Accelerator.load(IMPL)
PROTOCOL = Accelerator.protocol_class(PROTOCOL_NAME)

UUID = "00112233-4455-6677-8899-aabbccddeeff"
# [name, value written, values per buffer]: buffers stay under GARBAGE_BUFFER_SIZE, as a typical message does.
OPS = [
  [:byte, -5], [:bool, true], [:i16, -1234], [:i32, 123_456_789], [:i64, 1 << 40], [:double, 1234.5],
  [:string, "hello, thrift"], [:binary, "\x00\x01binary".b], [:uuid, UUID]
].freeze

TYPES = { byte: Thrift::Types::BYTE, bool: Thrift::Types::BOOL, i16: Thrift::Types::I16, i32: Thrift::Types::I32,
          i64: Thrift::Types::I64, double: Thrift::Types::DOUBLE, string: Thrift::Types::STRING,
          binary: Thrift::Types::STRING, uuid: 16 }.freeze

OPS.each do |name, value|
  next if name == :uuid && !PROTOCOL.method_defined?(:read_uuid)

  reader = "read_#{name}"
  writer = "write_#{name}"
  trans = Thrift::MemoryBufferTransport.new
  prot = PROTOCOL.new(trans)
  size = (prot.send(writer, value); trans.available)
  per_batch = [4000 / size, 1].max
  trans.reset_buffer
  # JSON: a fresh protocol (no contexts left from the size probe) and the list around the values.
  prot = PROTOCOL.new(trans)
  prot.write_list_begin(TYPES.fetch(name), per_batch) if JSON_LIST
  per_batch.times { prot.send(writer, value) }
  prot.write_list_end if JSON_LIST
  data = trans.instance_variable_get(:@buf).dup
  trans.reset_buffer(data.dup)
  prot.read_list_begin if JSON_LIST
  raise "#{reader} round trip failed" unless prot.send(reader) == value

  list_begin, list_end = JSON_LIST ? [["prot.read_list_begin", "prot.read_list_end"], [
    "prot.write_list_begin(#{TYPES.fetch(name)}, per_batch)", "prot.write_list_end"]] : [["", ""], ["", ""]]
  prot = PROTOCOL.new(trans)

  # Each op is spelled out so that the loop calls it directly, as application code does.
  read_batch = eval(<<~RUBY, binding, __FILE__, __LINE__ + 1)
    lambda do
      trans.reset_buffer(data)
      #{list_begin[0]}
      i = 0
      while i < per_batch
        prot.#{reader}
        i += 1
      end
      #{list_begin[1]}
      per_batch
    end
  RUBY
  write_batch = eval(<<~RUBY, binding, __FILE__, __LINE__ + 1)
    lambda do
      trans.reset_buffer(data)
      #{list_end[0]}
      i = 0
      while i < per_batch
        prot.#{writer}(value)
        i += 1
      end
      #{list_end[1]}
      per_batch
    end
  RUBY
  # reset_buffer copies `data` into the buffer once per batch; that copy is part of every implementation's figure.
  [[reader, read_batch], [writer, write_batch]].each do |op, batch|
    ns, objects = measure_batches(batch, SECONDS)
    puts JSON.generate(impl: IMPL, protocol: PROTOCOL_NAME, op: op, ns_per_call: ns.round(1), objects_per_call: objects.round(4))
    $stdout.flush
  end
end
