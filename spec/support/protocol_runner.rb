# frozen_string_literal: true

# Applies a list of protocol operations with one accelerator and prints the outcome (Marshal on stdout), so that
# the same operations can be compared across pure Ruby, the installed C accelerator and thrift_native, each in its
# own process. Usage: ruby protocol_runner.rb pure|c|ours [plain|subclass] [binary|compact] < ops.marshal
#
# ops: [[method, *args], ...]; every call's result (or exception) is recorded, then the transport's bytes.
# Pseudo-ops: [:feed, bytes] appends bytes to the transport; [:new_protocol] continues with a fresh protocol on the
# same transport (a compact reader starts with its own field-id stack); [:reset, bytes] starts over: the transport
# holds just `bytes`, read by a fresh protocol.

require_relative "accelerator"

Accelerator.load(ARGV.fetch(0))
transport_kind = ARGV.fetch(1, "plain")
protocol_class = Accelerator.protocol_class(ARGV.fetch(2, "binary"))

# A subclass takes the dispatch path: every transport call goes through Ruby.
class RecordingTransport < Thrift::MemoryBufferTransport
  attr_reader :calls

  def initialize(*)
    super
    @calls = []
  end

  %i[write read read_all read_byte read_into_buffer].each do |name|
    define_method(name) do |*args|
      @calls << name
      super(*args)
    end
  end
end

ops = Marshal.load($stdin.read)
trans = transport_kind == "subclass" ? RecordingTransport.new : Thrift::MemoryBufferTransport.new
prot = protocol_class.new(trans)
results = ops.map do |name, *args|
  if name == :feed
    trans.write(args.first)
    next [:ok, nil]
  end
  if name == :new_protocol || name == :reset
    trans.reset_buffer(args.first.dup) if name == :reset
    prot = protocol_class.new(trans)
    next [:ok, nil]
  end
  value = prot.public_send(name, *args)
  value = [value, value.encoding.name] if value.is_a?(String)
  value = [:float_bits, [value].pack("G")] if value.is_a?(Float)
  [:ok, value]
rescue StandardError, ScriptError => e
  [:error, e.class.name, e.message, e.respond_to?(:type) ? e.type : nil]
end
$stdout.binmode
$stdout.write Marshal.dump(results: results, bytes: trans.instance_variable_get(:@buf).byteslice(trans.instance_variable_get(:@index)..),
                           calls: trans.respond_to?(:calls) ? trans.calls.uniq.sort : nil)
