# frozen_string_literal: true

# JsonProtocol struct reads with one accelerator per process, and the protocol's state they leave:
#   ruby json_read_runner.rb ACCELERATOR [dispatch] < Marshal [[shape, bytes], ...]
#     -> Marshal [[outcomes, state], ...]
# `shape` says where the Everything structs sit: "top" (one struct), "list" (`["rec",N,...]`, the header and end read
# by the protocol's own methods, each element by Struct#read) or "map" (`["str","rec",N,{"k":{...},...}]`). `outcomes`
# is each struct's inspect, or the exception of the first that fails (outcome.rb, the message's bytes). `state` is
# what the transport and the protocol hold afterwards: bytes left and @index, the reader's held byte, @context and
# @contexts.
# "dispatch" reads through a subclass of JsonProtocol (the dispatch path). GC_STRESS=1 runs under GC.stress.
# TRANSPORT=framed reads each document from a FramedTransport over a MemoryBufferTransport, the document cut into
# frames of 1 to 64 bytes (or one frame, for every third document); TRANSPORT=buffered, from a BufferedTransport over
# a PipeTransport (spec/support/fixtures). The state is then the read buffer's unread bytes and @index, and the bytes
# left beneath.
require_relative "../../../test_support/accelerator"
require_relative "../../../test_support/gc_stress"
require_relative "outcome"
Accelerator.load(ARGV.fetch(0))
require_relative "../../../test_support/codec_types"
require_relative "../fixtures/pipe_transport"
CodecTypes.load!
$stdout.binmode

PROTOCOL = ARGV[1] == "dispatch" ? Class.new(Thrift::JsonProtocol) : Thrift::JsonProtocol

def context_state(c)
  [c.class.name, c.instance_variables.sort.map { |i| [i, c.instance_variable_get(i)] }]
end

TRANSPORT = ENV.fetch("TRANSPORT", "memory")

# The transport a document is read from.
def transport_for(bytes, index)
  case TRANSPORT
  when "memory" then Thrift::MemoryBufferTransport.new(bytes)
  when "buffered" then Thrift::BufferedTransport.new(PipeTransport.new(bytes))
  when "framed"
    r = Random.new(index)
    frames = "".b
    rest = bytes.b
    until rest.empty?
      n = (index % 3).zero? ? rest.bytesize : r.rand(1..64)
      chunk = rest.byteslice(0, n)
      rest = rest.byteslice(chunk.bytesize..)
      frames << [chunk.bytesize].pack("N") << chunk
    end
    Thrift::FramedTransport.new(Thrift::MemoryBufferTransport.new(frames))
  end
end

def transport_state(trans)
  return [trans.available, trans.instance_variable_get(:@index)] if TRANSPORT == "memory"

  rbuf = trans.instance_variable_get(:@rbuf)
  index = trans.instance_variable_get(:@index)
  inner = trans.instance_variable_get(:@transport)
  [rbuf.bytesize - index, index, inner.respond_to?(:unread) ? inner.unread.bytesize : inner.available]
end

def state(trans, prot)
  reader = prot.instance_variable_get(:@reader)
  held = reader.instance_variable_get(:@hasData) ? reader.instance_variable_get(:@data) : nil
  [*transport_state(trans), held,
   context_state(prot.instance_variable_get(:@context)),
   prot.instance_variable_get(:@contexts).map { |c| context_state(c) }]
end

def read_struct(prot, outcomes)
  obj = CodecTest::Everything.new
  obj.read(prot)
  outcomes << obj.inspect.b
end

def read_shape(shape, prot, outcomes)
  case shape
  when "top" then read_struct(prot, outcomes)
  when "list"
    _, size = prot.read_list_begin
    size.times { read_struct(prot, outcomes) }
    prot.read_list_end
  when "map"
    _, _, size = prot.read_map_begin
    size.times do
      prot.read_string
      read_struct(prot, outcomes)
    end
    prot.read_map_end
  end
end

inputs = Marshal.load($stdin.read)
GC.stress = GcStress.setting if ENV["GC_STRESS"]
results = inputs.each_with_index.map do |(shape, bytes), index|
  trans = transport_for(bytes, index)
  prot = PROTOCOL.new(trans)
  outcomes = []
  begin
    read_shape(shape, prot, outcomes)
  rescue StandardError, NotImplementedError, SystemStackError => e
    outcomes << Outcome.error(e, e.message.b)
  end
  [outcomes, state(trans, prot)]
end
GC.stress = false
$stdout.write Marshal.dump(results)
