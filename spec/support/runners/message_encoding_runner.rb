# frozen_string_literal: true

# The encodings of the messages the accelerated methods raise with, for spec/integration/message_encoding_spec.rb:
# the C accelerator's `rb_raise` and `rb_str_new` make BINARY messages, the transports' Ruby files are
# `# encoding: ascii-8bit`, json_protocol.rb and processor.rb are UTF-8 source. `==` of ASCII-only Strings ignores
# the encoding, so the other differential specs do not see it.
#   ruby message_encoding_runner.rb ACCELERATOR -> Marshal [[case, class name, message, encoding name], ...]
require "socket"
require_relative "../../../test_support/accelerator"
require_relative "../../../test_support/codec_types"

Accelerator.load(ARGV.fetch(0))
CodecTypes.load!
$stdout.binmode

def buffer(bytes = "") = Thrift::MemoryBufferTransport.new(bytes.b)
def binary(bytes = "") = Accelerator.protocol_class("binary").new(buffer(bytes))
def compact(bytes = "") = Thrift::CompactProtocol.new(buffer(bytes))
def frame(bytes) = [bytes.bytesize].pack("N") + bytes.b

# A FramedTransport over a Thrift::Socket whose peer is given to the block before the call.
def over_socket(timeout: nil)
  ours, peer = UNIXSocket.pair
  socket = Thrift::Socket.new("localhost", 9090, timeout)
  socket.handle = ours
  yield Thrift::FramedTransport.new(socket), peer
ensure
  peer&.close unless peer&.closed?
  ours&.close unless ours&.closed?
end

cases = {
  "memory buffer: read past the end" => -> { buffer("ab").read(3) },
  "memory buffer: read_byte at the end" => -> { buffer.read_byte },
  "memory buffer: read_into_buffer of an empty buffer" => -> { buffer("ab").read_into_buffer(+"", 1) },
  "binary: no version identifier" => -> { binary("\x00\x00\x00\x01a\x01\x00\x00\x00\x00").read_message_begin },
  "binary: bad version" => -> { binary("\x80\x02\x00\x01\x00\x00\x00\x00").read_message_begin },
  "binary: write_string(nil)" => -> { binary.write_string(nil) },
  "binary: write_binary(nil)" => -> { binary.write_binary(nil) },
  "binary: write_string(1)" => -> { binary.write_string(1) },
  "compact: bad protocol id" => -> { compact("\x81\x01").read_message_begin },
  "compact: bad version" => -> { compact("\x82\x02").read_message_begin },
  "struct: read past the end" => -> { CodecTest::Small.new.read(binary("\x08\x00\x04\x00")) },
  "struct: negative list size" => -> { CodecTest::Level.new.read(binary("\x0f\x00\x01\x0c\xff\xff\xff\xff")) },
  "struct: compact, negative list size" => -> { CodecTest::Level.new.read(compact("\x19\xfc\xff\xff\xff\x0f")) },
  "socket: the peer closes mid-frame" => lambda {
    over_socket do |t, peer|
      peer.write(frame("abc")[0, 5])
      peer.close
      t.read(3)
    end
  },
  "socket: closed" => lambda {
    over_socket do |t, _peer|
      t.instance_variable_get(:@transport).close
      t.read(1)
    end
  },
  "socket, timed: the frame's rest never comes" => lambda {
    over_socket(timeout: 0.2) do |t, peer|
      peer.write(frame("abc")[0, 5])
      t.read(3)
    end
  }
}

out = cases.map do |name, call|
  call.call
  [name, :no_error]
rescue StandardError => e
  cause = e.cause && [e.cause.class.name, e.cause.message, e.cause.message.encoding.name]
  [name, e.class.name, e.message, e.message.encoding.name, cause]
end
$stdout.write Marshal.dump(out)
