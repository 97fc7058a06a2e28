# frozen_string_literal: true

# Calls under a Fiber scheduler with one accelerator, for spec/integration/fiber_scheduler_spec.rb: in one process,
# under our scheduler (../fixtures/fiber_scheduler.rb), a server (a Thrift::ServerSocket on loopback TCP, a fiber
# accepting, a fiber per connection running the generated Processor of test_support/idl/rpc_test.thrift) and
# CONNECTIONS clients (the generated Client, each in a fiber of its own on a connection of its own), for each stack
# (framed and buffered, binary and compact):
# - "STACK": CALLS `add` calls per client. The handler records each call's entry and exit and pauses between them with
#   `sleep`, which waits through the scheduler (as a handler waiting on a database would): while calls overlap,
#   every connection's first call enters before any call exits.
# - "STACK, the handler blocking the thread" (framed binary only): the same with a pause that blocks the thread (a
#   blocking fiber's sleep, which no scheduler sees): the negative control, whose calls cannot overlap.
# - "STACK, LARGE bytes each way" (framed binary, buffered compact): one `echo` per client of a struct holding LARGE
#   bytes, over sockets whose buffers are made small: writes and reads on both sides must wait for the peer to drain
#   or fill them, which only a fiber switch lets it do (client and server share one thread: a wait that blocked the
#   thread would hang the run, and the spec's timeout ends it).
#   ruby fiber_scheduler_runner.rb ACCELERATOR -> Marshal { run name => { answers: { connection => answers },
#   events: [[:enter or :exit, connection, call], ...], waited: { :readable, :writable, :sleep, :block => count } } }
require "socket"
require_relative "../../../test_support/accelerator"
require_relative "../../../test_support/codec_types"
require_relative "../fixtures/fiber_scheduler"

# A run that hangs (a socket wait that blocked the thread, which client and server share) fails here with where the
# thread was, before the spec's timeout kills the child. A thread of its own: the scheduler is the main thread's.
WATCHDOG = 30
Thread.new do
  sleep WATCHDOG
  warn "still running after #{WATCHDOG} s; the main thread is at:", *Thread.main.backtrace
  exit!(1)
end

Accelerator.load(ARGV.fetch(0))
CodecTypes.load_service!(File.expand_path("../../../test_support/idl/rpc_test.thrift", __dir__), "calc")
$stdout.binmode

CONNECTIONS = 4
CALLS = 3
# A handler's pause. Its length decides nothing when fibers interleave (every first call has entered before the first
# pause can end: see the spec); it only makes the blocking control take CONNECTIONS * CALLS of them.
PAUSE = 0.05
# The large echo's payload, and the socket buffers asked for on both ends (Linux doubles them; a loopback socket's
# own are megabytes): far more bytes than the sockets hold, so that a write of them must wait for the reader.
LARGE = 2 * 1024 * 1024
SOCKET_BUFFER = 32 * 1024

# name => [transport class, protocol name (Accelerator.protocol_class)]
STACKS = {
  "framed binary" => [Thrift::FramedTransport, "binary"],
  "framed compact" => [Thrift::FramedTransport, "compact"],
  "buffered binary" => [Thrift::BufferedTransport, "binary"],
  "buffered compact" => [Thrift::BufferedTransport, "compact"],
}.freeze

# Pauses: through the scheduler (kernel_sleep), or blocking the thread: inside a blocking fiber Ruby asks no
# scheduler (Fiber.blocking {} is 3.2's; Fiber.new(blocking: true) serves 3.1 as well).
SCHEDULED_PAUSE = -> { sleep PAUSE }
BLOCKING_PAUSE = -> { Fiber.new(blocking: true) { sleep PAUSE }.resume }

# The service's handler: `add(connection, 10 * call)` records [:enter, connection, call], pauses, records [:exit, ...]
# and answers the sum, which tells every call's answer from every other's; `echo` answers its struct.
class PausingHandler
  def initialize(events, pause) = (@events, @pause = events, pause)

  def add(connection, tens)
    @events << [:enter, connection, tens / 10]
    @pause.call
    @events << [:exit, connection, tens / 10]
    connection + tens
  end

  def echo(small) = small
end

# What a client does on its connection: its answers.
ADDS = ->(client, connection) { (1..CALLS).map { |call| client.add(connection, 10 * call) } }
LARGE_ECHO = lambda do |client, connection|
  sent = CodecTest::Small.new(normal: connection, payload: Random.new(connection).bytes(LARGE))
  echoed = client.echo(sent)
  [echoed == sent, echoed.normal, echoed.payload.bytesize]
end

def protocol_of(stack, trans)
  Accelerator.protocol_class(STACKS.fetch(stack)[1]).new(trans)
end

def small_buffers(io)
  io.setsockopt(Socket::SOL_SOCKET, Socket::SO_SNDBUF, SOCKET_BUFFER)
  io.setsockopt(Socket::SOL_SOCKET, Socket::SO_RCVBUF, SOCKET_BUFFER)
end

# The accepting fiber: CONNECTIONS connections, each served by a fiber of its own until its client closes it.
def serve(listener, stack, processor)
  Fiber.schedule do
    CONNECTIONS.times do
      socket = listener.accept
      small_buffers(socket.handle)
      Fiber.schedule { serve_connection(socket, stack, processor) }
    end
    listener.close
  end
end

def serve_connection(socket, stack, processor)
  trans = STACKS.fetch(stack)[0].new(socket)
  prot = protocol_of(stack, trans)
  loop { processor.process(prot, prot) }
rescue Thrift::TransportException
  # The client closed the connection (what Thrift's own servers rescue).
ensure
  trans.close
end

# A client fiber: its own connection, its calls, its answers kept.
def client(port, stack, connection, answers, calls)
  Fiber.schedule do
    socket = Thrift::Socket.new("127.0.0.1", port)
    trans = STACKS.fetch(stack)[0].new(socket)
    trans.open
    small_buffers(socket.handle)
    answers[connection] = calls.call(RpcTest::Calc::Client.new(protocol_of(stack, trans)), connection)
    trans.close
  end
end

# One run: server and clients under a new scheduler, until every fiber has ended.
def run(stack, pause: SCHEDULED_PAUSE, calls: ADDS)
  events = []
  answers = {}
  listener = Thrift::ServerSocket.new("127.0.0.1", 0)
  listener.listen
  processor = RpcTest::Calc::Processor.new(PausingHandler.new(events, pause))
  scheduler = FiberScheduler.new
  Fiber.set_scheduler(scheduler)
  serve(listener, stack, processor)
  CONNECTIONS.times { |connection| client(listener.handle.addr[1], stack, connection, answers, calls) }
  Fiber.set_scheduler(nil) # the scheduler's close: its loop runs every fiber to its end
  { answers: answers, events: events, waited: scheduler.waited.to_h }
end

runs = STACKS.keys.to_h { |stack| [stack, run(stack)] }
runs["framed binary, the handler blocking the thread"] = run("framed binary", pause: BLOCKING_PAUSE)
["framed binary", "buffered compact"].each do |stack|
  runs["#{stack}, #{LARGE} bytes each way"] = run(stack, calls: LARGE_ECHO)
end
$stdout.write(Marshal.dump(runs))
