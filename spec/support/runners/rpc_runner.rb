# frozen_string_literal: true

# End to end, with one accelerator: a generated client (test_support/idl/rpc_test.thrift) calling a Thrift server in
# a forked process over a UNIX socket, the accelerator loaded on both sides, for each stack the loaded thrift has
# (framed binary, buffered compact, framed JSON, multiplexed, HeaderTransport on thrift master): every kind of call
# (void, arguments and an answer, a struct both ways, a declared exception, a handler that raises, a oneway call, an
# unknown method), then a load of calls from several threads on their own connections; and faults from a peer that
# is no Thrift server (a reply cut short, garbage, a reply to another method) and to a server from a client that
# sends garbage.
#   ruby rpc_runner.rb ACCELERATOR -> Marshal [[case name, outcome], ...]
# outcome: what the calls answered (inspected) or raised (outcome.rb: class, first line of the message, type).
require "socket"
require "tmpdir"
require "stringio"
require_relative "../../../test_support/accelerator"
require_relative "../../../test_support/codec_types"
require_relative "../../../test_support/codec_samples"
require_relative "outcome"

Accelerator.load(ARGV.fetch(0))
CodecTypes.load_service!(File.expand_path("../../../test_support/idl/rpc_test.thrift", __dir__), "calc")
$stdout.binmode

# The server's handler: `fire` adds to what `add` answers next, `trouble` raises what its argument names.
class CalcHandler
  def initialize = (@fired = 0)
  def ping = nil
  def add(a, b) = a + b + @fired.tap { @fired = 0 }
  def echo(s) = s
  def fire(n) = (@fired += n) && nil

  def trouble(why)
    raise RpcTest::Oops, why if why == "declared" # (the generated exception takes its one String field as the message)
    raise ArgumentError, why if why == "undeclared"

    why.size
  end
end

HEADER = defined?(Thrift::HeaderTransport)

# A protocol factory making `protocol.new(trans)`.
def protocol_factory(protocol)
  Class.new(Thrift::BaseProtocolFactory) { define_method(:get_protocol) { |trans| protocol.new(trans) } }.new
end

# name => [transport factory, the client's protocol of a transport, the server's protocol factory, multiplexed]
STACKS = {
  "framed binary" => [Thrift::FramedTransportFactory, Accelerator.protocol_class("binary"), false],
  "buffered compact" => [Thrift::BufferedTransportFactory, Thrift::CompactProtocol, false],
  "framed json" => [Thrift::FramedTransportFactory, Thrift::JsonProtocol, false],
  "multiplexed framed compact" => [Thrift::FramedTransportFactory, Thrift::CompactProtocol, true],
}.transform_values { |f, protocol, mux| [f, protocol.method(:new), protocol_factory(protocol), mux] }
# thrift master: HeaderTransport and HeaderProtocol on both sides (the binary subprotocol, the factory's default).
if HEADER
  STACKS["header"] = [Thrift::HeaderTransportFactory,
                      ->(trans) { Thrift::HeaderProtocol.new(trans, nil, Thrift::HeaderSubprotocolID::BINARY) },
                      Thrift::HeaderProtocolFactory.new, false]
end
STACKS.freeze

def client_for(path, stack)
  factory, protocol, _, multiplexed = STACKS.fetch(stack)
  trans = factory.new.get_transport(Thrift::UNIXSocket.new(path))
  trans.open
  prot = protocol.call(trans)
  prot = Thrift::MultiplexedProtocol.new(prot, "Calc") if multiplexed
  [RpcTest::Calc::Client.new(prot), trans]
end

# A ThreadedServer for `stack` on `path`, forked; the block runs with its path, then the server is stopped. The socket
# listens before the fork: waiting for its file to appear raced the child's bind(2) and listen(2), and a connection
# between them was refused (seen on a loaded machine).
def with_server(dir, stack)
  factory, _, protocols, multiplexed = STACKS.fetch(stack)
  path = File.join(dir, "calc.sock")
  server_socket = Thrift::UNIXServerSocket.new(path)
  server_socket.listen
  pid = fork do
    processor = RpcTest::Calc::Processor.new(CalcHandler.new)
    if multiplexed
      processor = Thrift::MultiplexedProcessor.new.tap { |m| m.register_processor("Calc", processor) }
    end
    $stdout.reopen(File::NULL) # the runner's answer is the parent's; a server left running must not hold the pipe
    $stderr.reopen(File::NULL) unless ENV["RPC_RUNNER_TRACE"] # the library logs a handler's error at debug level; nothing else is expected
    server_socket.define_singleton_method(:listen) { nil } # listening already; ThreadedServer#serve would bind again
    Thrift::ThreadedServer.new(processor, server_socket, factory.new, protocols).serve
  end
  # The parent's copy of the listening socket; not #close, which would also delete the socket's file.
  server_socket.handle.close
  yield path
ensure
  Process.kill(:KILL, pid) if pid
  Process.wait(pid) if pid
  File.delete(path) if path && File.exist?(path)
end

def outcome
  Outcome.ok(yield.inspect)
rescue StandardError => e
  Outcome.failed(e, e.message.to_s.lines.first.to_s.chomp)
end

SMALL = CodecSamples.small

# The calls of one connection, in order; each case goes on after the one before failed.
CALLS = [
  ["ping", ->(c) { c.ping }],
  ["add", ->(c) { c.add(2, 3) }],
  ["echo a struct", ->(c) { c.echo(SMALL) }],
  ["a declared exception", ->(c) { c.trouble("declared") }],
  ["a call after it", ->(c) { c.trouble("fine") }],
  ["a handler that raises", ->(c) { c.trouble("undeclared") }],
  # What a oneway call answers (thrift_native's FramedTransport#flush answers its emptied @wbuf, which the next call
  # fills and empties again: README, deliberate differences), as it answers it.
  ["a oneway call, then a call", ->(c) { [c.fire(40).inspect, c.add(1, 1)] }],
  ["an unknown method", lambda { |c|
    c.send_message("nope", RpcTest::Calc::Ping_args)
    c.recv_ping
  }],
  ["a call after it", ->(c) { c.add(-5, 5) }],
].freeze

# Threads on connections of their own, each checking every answer.
def load(path, stack, threads: 4, calls: 150)
  Array.new(threads) do |t|
    Thread.new do
      client, trans = client_for(path, stack)
      wrong = (1..calls).count do |i|
        case i % 3
        when 0 then client.add(t, i) != t + i
        when 1 then client.echo(SMALL) != SMALL
        else !client.ping.nil?
        end
      end
      trans.close
      wrong
    end
  end.map(&:value)
end

results = []

# Faults from a peer that is no Thrift server: the client's transport over one end of a socket pair, the peer
# answering the request it reads with the bytes `reply` makes of it.
def against_peer(stack, &reply)
  factory, protocol, = STACKS.fetch(stack)
  ours, peer = UNIXSocket.pair
  socket = Thrift::UNIXSocket.new("peer")
  socket.handle = ours
  trans = factory.new.get_transport(socket)
  client = RpcTest::Calc::Client.new(protocol.call(trans))
  peer_thread = Thread.new do
    request = peer.readpartial(65_536)
    peer.write(reply.call(request))
    peer.close
  end
  outcome { client.add(1, 2) }.tap { peer_thread.join }
ensure
  [ours, peer].each { |io| io.close unless io.closed? }
end

# The bytes of `message` (a header and an answer struct) in `stack`'s protocol and framing.
def reply_bytes(stack, name, type, seqid, answer)
  factory, protocol, = STACKS.fetch(stack)
  out = Thrift::MemoryBufferTransport.new
  trans = factory.new.get_transport(out)
  prot = protocol.call(trans)
  prot.write_message_begin(name, type, seqid)
  answer.write(prot)
  prot.write_message_end
  trans.flush
  out.read(out.available)
end

%w[framed\ binary buffered\ compact].each do |stack|
  reply = reply_bytes(stack, "add", Thrift::MessageTypes::REPLY, 0, RpcTest::Calc::Add_result.new(success: 3))
  results << ["#{stack}, a peer: a whole reply", against_peer(stack) { reply }]
  results << ["#{stack}, a peer: a reply cut short", against_peer(stack) { reply[0, reply.bytesize - 3] }]
  results << ["#{stack}, a peer: garbage", against_peer(stack) { [40].pack("N") + ("\xFF".b * 40) }]
  other = reply_bytes(stack, "ping", Thrift::MessageTypes::REPLY, 0, RpcTest::Calc::Ping_result.new)
  results << ["#{stack}, a peer: the reply to another method", against_peer(stack) { other }]
  error = Thrift::ApplicationException.new(Thrift::ApplicationException::INTERNAL_ERROR, "peer's error")
  exception = reply_bytes(stack, "add", Thrift::MessageTypes::EXCEPTION, 0, error)
  results << ["#{stack}, a peer: an EXCEPTION reply", against_peer(stack) { exception }]
end

# The stacks' calls and loads (after the peers: the C accelerator answers some errors otherwise once it has served
# them, see rpc_end_to_end_spec.rb).
Dir.mktmpdir("thrift_native_rpc") do |dir|
  STACKS.each_key do |stack|
    with_server(dir, stack) do |path|
      client, trans = client_for(path, stack)
      CALLS.each { |name, call| results << ["#{stack}: #{name}", outcome { call.call(client) }] }
      trans.close
      results << ["#{stack}: a load of calls from 4 threads (wrong answers per thread)", outcome { load(path, stack) }]
    end
  end
end

# A client that sends garbage, then a good call on a new connection: what the server answers to each.
Dir.mktmpdir("thrift_native_rpc") do |dir|
  with_server(dir, "framed binary") do |path|
    bad = UNIXSocket.new(path)
    # A name that claims to go on past the frame: the server waits for the next frame, which never comes.
    bad.write([12].pack("N") + "\x80\x01\x00\x01garbage!".b)
    bad.close_write
    answer = (bad.read(4096) rescue $!.class.name)
    results << ["a server sent garbage: what it answers", Outcome.ok(answer.inspect)]
    client, trans = client_for(path, "framed binary")
    results << ["a server sent garbage: the next connection's call", outcome { client.add(1, 2) }]
    trans.close
  end
end

$stdout.write Marshal.dump(results)
