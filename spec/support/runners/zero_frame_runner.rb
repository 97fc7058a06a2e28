# frozen_string_literal: true

# Zero-length frames through a FramedTransport, with one accelerator per process:
#   ruby zero_frame_runner.rb c|ours [refusing] -> Marshal {case => [outcome, state afterwards]}
# `refusing` gives the library, before any accelerator is loaded over it, the FramedTransport#read_frame of THRIFT-6155
# (thrift master after 2026-08-24, not in the shared snapshot): a zero-length frame is TransportException
# (END_OF_FILE), as that change makes it; thrift_native finds it by its probe. Each case reads frames from a
# MemoryBufferTransport or a Thrift::Socket (one end of a UNIX socket pair) with the transport's methods, a
# protocol's, or a struct's `read`; the state is the transport's @index, @rbuf and the bytes left beneath.
require_relative "../../../test_support/accelerator"
require_relative "../../../test_support/codec_types"
require_relative "../../../test_support/codec_samples"
require_relative "outcome"
require "socket"

accelerator, refusing = ARGV.fetch(0), ARGV[1] == "refusing"

# THRIFT-6155's refusal, as the spec's stand-in for a library that has it.
def refuse_zero_frames
  Thrift::FramedTransport.class_eval do
    private

    def read_frame
      sz = @transport.read_all(4).unpack1("N")
      raise Thrift::TransportException.new(Thrift::TransportException::END_OF_FILE, "Zero-length frame received") if sz.zero?

      @index = 0
      @rbuf = @transport.read_all(sz)
    end
  end
end

case accelerator
when "c"
  Accelerator.load("c")
  refuse_zero_frames if refusing
when "ours"
  $LOADED_FEATURES << "thrift_native.so" # thrift.rb loads no accelerator
  require "thrift"
  refuse_zero_frames if refusing
  require File.join(Accelerator::LIB, "thrift_native.rb")
  abort "thrift_native is not active" unless ThriftNative.active?
end
CodecTypes.load!
$stdout.binmode

ZERO = "\0\0\0\0".b
SMALL = CodecSamples.small

def frame(bytes) = [bytes.bytesize].pack("N") + bytes

def struct_bytes(klass)
  m = Thrift::MemoryBufferTransport.new
  SMALL.write(klass.new(m))
  m.read(m.available)
end

# A FramedTransport over `bytes`: in a MemoryBufferTransport, or sent down a UNIX socket pair to a Thrift::Socket.
def framed(bytes, beneath)
  inner = if beneath == "memory"
            Thrift::MemoryBufferTransport.new(bytes)
          else
            ours, theirs = UNIXSocket.pair
            theirs.write(bytes)
            theirs.close
            Thrift::Socket.new.tap { |s| s.handle = ours }
          end
  Thrift::FramedTransport.new(inner)
end

def state(t)
  inner = t.instance_variable_get(:@transport)
  left = inner.is_a?(Thrift::MemoryBufferTransport) ? inner.available : nil
  [t.instance_variable_get(:@index), t.instance_variable_get(:@rbuf)&.b, left]
end

def outcome
  value = yield
  Outcome.ok(value.is_a?(String) ? value.b : value.inspect)
rescue StandardError => e
  Outcome.failed(e, Outcome.first_line(e))
end

PROTOCOLS = { "binary" => Thrift::BinaryProtocolAccelerated, "plain" => Thrift::BinaryProtocol,
              "compact" => Thrift::CompactProtocol }.freeze
results = {}
%w[memory socket].each do |beneath|
  { "alone" => ZERO, "before a frame" => ZERO + frame("ab"), "after a frame" => frame("a") + ZERO + frame("b") }.each do |where, bytes|
    { "read_byte" => ->(t) { [t.read_byte, t.read_byte] }, "read(2)" => ->(t) { [t.read(2), t.read(2)] },
      "read_all(2)" => ->(t) { t.read_all(2) },
      "read_into_buffer" => ->(t) { b = +"xxxx".b; t.read_into_buffer(b, 2); b } }.each do |call, f|
      next if beneath == "socket" && where == "alone" && call != "read_byte" # waits for nothing: the peer closed

      t = framed(bytes, beneath)
      results["#{beneath} #{where} #{call}"] = [outcome { f.call(t) }, state(t)]
    end
  end
  PROTOCOLS.each do |name, klass|
    data = struct_bytes(klass)
    # A zero-length frame between two messages of a stream, and one in place of the second.
    [ZERO + frame(data), frame(data) + ZERO + frame(data), frame(data) + ZERO].each_with_index do |bytes, i|
      t = framed(bytes, beneath)
      prot = klass.new(t)
      reads = Array.new(2) { outcome { CodecTest::Small.new.tap { |s| s.read(prot) } } }
      results["#{beneath} #{name} structs #{i}"] = [reads, state(t)]
      t = framed(bytes, beneath)
      results["#{beneath} #{name} i32 #{i}"] = [outcome { klass.new(t).read_i32 }, state(t)]
    end
  end
end
$stdout.write Marshal.dump(results)
