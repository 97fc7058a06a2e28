# frozen_string_literal: true

# One accelerator's RPC throughput: the generated BenchService::Bench client calling a Thrift::SimpleServer (forked,
# the same accelerator loaded) over loopback TCP and a UNIX socket, through FramedTransport and BufferedTransport,
# with the binary and the compact protocol, and multiplexed (framed, binary), and over TCP with the plain
# Thrift::BinaryProtocol (BinaryProtocolFactory's, "plain") on both ends; `small` answers the small benchmark
# struct, `large` the large one (the shape of upstream's Nested4, about 1.4 MB in binary). Calls per second over one window, and objects the client
# allocates per call.
# Run by bench/run.rb in a child process per accelerator, in rounds that take the accelerators in turn (the best
# round counts), pinned to one CPU (server and client: a process woken on an idle other core waits about 60 us on
# this VM); prints one JSON line per measurement.
#
# `floor`: no Thrift at all on the wire, the time the sockets themselves take: a plain Ruby client and server (forked)
# exchange byte strings of the sizes of each call's request and reply frames (made once by the pure-Ruby library)
# with IO#write and IO#read and nothing else.
#   ruby bench/rpc.rb pure|c|c-master|ours|floor [seconds per measurement]
# BENCH_ONLY="tcp framed binary": the calls of that stack alone (selection.rb), e.g. "tcp framed binary small".

require "json"
require "socket"
require "tmpdir"
require "fileutils"
require_relative "../test_support/accelerator"
require_relative "../test_support/codec_types"
require_relative "../test_support/codec_samples"
require_relative "selection"
require_relative "call_rate"

IMPL = ARGV.fetch(0)
SECONDS = Float(ARGV.fetch(1, "0.5"))
FLOOR = IMPL == "floor"
Accelerator.load(FLOOR ? "pure" : IMPL)
CodecTypes.load_service!(File.expand_path("idl/bench_service.thrift", __dir__))
Accelerator.exit_unless_structs_run

# The server's answers, made once.
class BenchHandler
  SMALL = CodecSamples.small
  LARGE = CodecSamples.large

  def small(_n) = SMALL
  def large(_n) = LARGE
end

# "multiplexed": framed, the client's protocol a MultiplexedProtocol for service "Bench", the server a
# MultiplexedProcessor with the service registered under that name (binary only).
MUX = "multiplexed"
TRANSPORTS = { "framed" => Thrift::FramedTransport, "buffered" => Thrift::BufferedTransport,
               MUX => Thrift::FramedTransport }.freeze
FACTORIES = { "framed" => Thrift::FramedTransportFactory, "buffered" => Thrift::BufferedTransportFactory,
              MUX => Thrift::FramedTransportFactory }.freeze

def client_protocol(transport, protocol, trans)
  prot = Accelerator.protocol_class(protocol).new(trans)
  transport == MUX ? Thrift::MultiplexedProtocol.new(prot, "Bench") : prot
end

def server_processor(transport)
  processor = BenchService::Bench::Processor.new(BenchHandler.new)
  return processor unless transport == MUX

  Thrift::MultiplexedProcessor.new.tap { |mux| mux.register_processor("Bench", processor) }
end

def protocol_factory(protocol)
  return Thrift::CompactProtocolFactory.new if protocol == "compact"
  return Thrift::BinaryProtocolFactory.new if protocol == "plain"

  IMPL.start_with?("pure") ? Thrift::BinaryProtocolFactory.new : Thrift::BinaryProtocolAcceleratedFactory.new
end

# A server socket bound now (so that the client can connect at once), and how the client reaches it.
def endpoint(kind, dir)
  if kind == "unix"
    path = File.join(dir, "bench.sock")
    [Thrift::UNIXServerSocket.new(path), -> { Thrift::UNIXSocket.new(path) }]
  else
    port = TCPServer.open("127.0.0.1", 0) { |s| s.addr[1] }
    [Thrift::ServerSocket.new("127.0.0.1", port), -> { Thrift::Socket.new("127.0.0.1", port) }]
  end
end

# The request and the reply of `call` as the stack writes them (the pure-Ruby library's bytes; every accelerator writes
# the same): the client's send_<call>(1), then the processor's answer to it.
def frames(transport, protocol, call)
  request_buffer = Thrift::MemoryBufferTransport.new
  client = BenchService::Bench::Client.new(client_protocol(transport, protocol, TRANSPORTS.fetch(transport).new(request_buffer)))
  client.public_send("send_#{call}", 1)
  request = request_buffer.read(request_buffer.available)
  reply_buffer = Thrift::MemoryBufferTransport.new
  # A BufferedTransport adds nothing to the bytes (and over a memory buffer its 4096-byte refill would fail).
  server_in = Thrift::MemoryBufferTransport.new(request.dup)
  server_in = Thrift::FramedTransport.new(server_in) if TRANSPORTS.fetch(transport) == Thrift::FramedTransport
  server_out = TRANSPORTS.fetch(transport).new(reply_buffer)
  processor = server_processor(transport)
  processor.process(Accelerator.protocol_class(protocol).new(server_in), Accelerator.protocol_class(protocol).new(server_out))
  [request, reply_buffer.read(reply_buffer.available)]
end

# A plain socket pair for the floor: [server socket, how the client connects].
def raw_endpoint(kind, dir)
  if kind == "unix"
    path = File.join(dir, "floor.sock")
    [UNIXServer.new(path), -> { UNIXSocket.new(path) }]
  else
    server = TCPServer.new("127.0.0.1", 0)
    port = server.addr[1]
    [server, -> { TCPSocket.new("127.0.0.1", port).tap { |s| s.setsockopt(Socket::IPPROTO_TCP, Socket::TCP_NODELAY, 1) } }]
  end
end

# The floor of one call: the client writes the request's bytes and reads the reply's, the server the other way round.
def measure_floor(socket, request, reply, dir)
  server, connect = raw_endpoint(socket, dir)
  pid = fork do
    conn = server.accept
    conn.setsockopt(Socket::IPPROTO_TCP, Socket::TCP_NODELAY, 1) if socket == "tcp"
    buf = String.new(capacity: request.bytesize)
    loop do
      break unless conn.read(request.bytesize, buf)

      conn.write(reply)
    end
  end
  server.close
  sock = connect.call
  buf = String.new(capacity: reply.bytesize)
  exchange = Object.new
  exchange.define_singleton_method(:call) do |_n|
    sock.write(request)
    sock.read(reply.bytesize, buf)
  end
  CallRate.measure(exchange, :call, SECONDS)
ensure
  sock&.close
  Process.wait(pid) if pid
  FileUtils.rm_f(File.join(dir, "floor.sock"))
end

Dir.mktmpdir("thrift_native_rpc") do |dir|
  stacks = %w[tcp unix].product(TRANSPORTS.keys, %w[binary compact]).reject { |_, t, p| t == MUX && p == "compact" }
  # The plain Thrift::BinaryProtocol (BinaryProtocolFactory's) on both ends, over TCP.
  stacks += [%w[tcp framed plain], %w[tcp buffered plain]]
  stacks.select! { |stack| Selection.wanted?(stack.join(" ")) }
  stacks.each do |socket, transport, protocol|
    calls = %w[small large].select { |call| Selection.wanted?("#{socket} #{transport} #{protocol} #{call}") }
    if FLOOR
      calls.each do |call|
        result = measure_floor(socket, *frames(transport, protocol, call), dir)
        puts JSON.generate({ impl: IMPL, op: "#{socket} #{transport} #{protocol} #{call}" }.merge(result))
        $stdout.flush
      end
      next
    end
    server_socket, connect = endpoint(socket, dir)
    server_socket.listen
    processor = server_processor(transport)
    server = Thrift::SimpleServer.new(processor, server_socket, FACTORIES.fetch(transport).new, protocol_factory(protocol))
    pid = fork do
      $stdout.reopen(File::NULL)
      server_socket.define_singleton_method(:listen) { nil } # bound above; SimpleServer#serve would bind again
      server.serve
    end
    # The parent's copy of the listening socket; not #close, which would also delete a UNIX socket's file.
    server_socket.handle.close
    begin
      trans = TRANSPORTS.fetch(transport).new(connect.call)
      trans.open
      client = BenchService::Bench::Client.new(client_protocol(transport, protocol, trans))
      calls.each do |call|
        result = CallRate.measure(client, call, SECONDS)
        puts JSON.generate({ impl: IMPL, op: "#{socket} #{transport} #{protocol} #{call}" }.merge(result))
        $stdout.flush
      end
      trans.close
    ensure
      Process.kill(:KILL, pid)
      Process.wait(pid)
      FileUtils.rm_f(File.join(dir, "bench.sock"))
    end
  end
end
