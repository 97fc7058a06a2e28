# frozen_string_literal: true

# Applies a list of protocol operations with one accelerator and prints the outcome (Marshal on stdout), so that
# the same operations can be compared across pure Ruby, the installed C accelerator and thrift_native, each in its
# own process. Usage: ruby protocol_runner.rb pure|c|ours TRANSPORT [binary|compact] < ops.marshal
#
# TRANSPORT: plain (a MemoryBufferTransport), subclass (a recording subclass of it: the dispatch path), or a
# FramedTransport or BufferedTransport over one: framed, framed-pipe, framed-subclass (a subclass of
# FramedTransport), buffered-pipe. A pipe is a Ruby transport whose `read` answers up to the bytes asked for.
#
# ops: [[method, *args], ...]; every call's result or exception is recorded (tagged: outcome.rb), then the bytes.
# Pseudo-ops: [:feed, bytes] appends bytes to the transport; [:flush] flushes it (a frame, a buffer); [:new_protocol] continues with a fresh protocol on the
# same transport (a compact reader starts with its own field-id stack); [:reset, bytes] starts over: the transport
# holds just `bytes`, read by a fresh protocol; [:unread] records the bytes the transports hold (as at the end).

require_relative "../../../test_support/accelerator"
require_relative "outcome"

Accelerator.load(ARGV.fetch(0))
require_relative "../fixtures/pipe_transport"
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

FramedSubclass = Class.new(Thrift::FramedTransport)

layer, inner_kind = transport_kind.split("-", 2)
inner = case inner_kind
        when nil, "subclass" then layer == "subclass" ? RecordingTransport.new : Thrift::MemoryBufferTransport.new
        when "pipe" then PipeTransport.new
        end
inner = Thrift::MemoryBufferTransport.new if layer == "framed" && inner_kind == "subclass"
trans = case layer
        when "framed" then inner_kind == "subclass" ? FramedSubclass.new(inner) : Thrift::FramedTransport.new(inner)
        when "buffered" then Thrift::BufferedTransport.new(inner)
        else inner
        end

unread = lambda do |t|
  case t
  when PipeTransport then t.unread
  when Thrift::MemoryBufferTransport then t.instance_variable_get(:@buf).byteslice(t.instance_variable_get(:@index)..)
  else [t.instance_variable_get(:@rbuf).byteslice(t.instance_variable_get(:@index)..), t.instance_variable_get(:@wbuf)]
  end
end
unread_now = -> { trans.equal?(inner) ? unread.call(inner) : [unread.call(trans), unread.call(inner)] }

ops = Marshal.load($stdin.read)
prot = protocol_class.new(trans)
results = ops.map do |name, *args|
  if name == :feed
    inner.write(args.first)
    next Outcome.ok(nil)
  end
  next Outcome.ok(unread_now.call) if name == :unread
  if name == :flush
    trans.flush
    next Outcome.ok(nil)
  end
  if name == :new_protocol || name == :reset
    inner.reset_buffer(args.first.dup) if name == :reset
    prot = protocol_class.new(trans)
    next Outcome.ok(nil)
  end
  value = prot.public_send(name, *args)
  value = [value, value.encoding.name] if value.is_a?(String)
  value = [:float_bits, [value].pack("G")] if value.is_a?(Float)
  Outcome.ok(value)
rescue StandardError, ScriptError => e
  Outcome.failed(e)
end
$stdout.binmode
bytes = unread_now.call
$stdout.write Marshal.dump(results: results, bytes: bytes, calls: inner.respond_to?(:calls) ? inner.calls.uniq.sort : nil)
