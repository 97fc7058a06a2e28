# frozen_string_literal: true

# FramedTransport and BufferedTransport over a Thrift::Socket or Thrift::UNIXSocket with one accelerator, for the
# differential spec of the calls they make on the socket (transports/socket.rs): one process per accelerator, the same
# cases, each on a fresh socket pair (or a TCP loopback pair) whose peer sends, stalls, closes or resets.
#   ruby socket_runner.rb ACCELERATOR -> Marshal [[case name, outcome, cause, handle state, IO calls, socket's Ruby
#   methods run], ...]; with GC_STRESS=1 the cases run under GC.stress.
# outcome: what the case's calls answered ([:ok, values]) or raised (outcome.rb); cause: the exception's cause (class,
# message); handle state: what `@handle` is afterwards (:nil, :closed, :open, or the double's recorded calls); IO
# calls: the IO methods the handle had called on it, in order (closed?, readpartial, write, close, ...); the last, the
# Thrift::Socket's own Ruby methods that ran (which the native calls skip: not compared).
require "socket"
require_relative "../../../test_support/accelerator"
require_relative "../../../test_support/gc_stress"
require_relative "outcome"

Accelerator.load(ARGV.fetch(0))
$stdout.binmode

def frame(bytes) = [bytes.bytesize].pack("N") + bytes.b

# A handle that is no IO: it answers from a script and records every call (the library's own methods serve it).
class HandleDouble
  attr_reader :calls

  def initialize(reads) = (@reads, @calls, @closed = reads.dup, [], false)
  def closed? = (@calls << [:closed?]) && @closed
  def close = (@calls << [:close]) && (@closed = true) && nil

  def readpartial(n)
    @calls << [:readpartial, n]
    r = @reads.shift
    raise r if r.is_a?(Exception)
    raise EOFError, "end of file reached" if r.nil?

    r.byteslice(0, n).tap { |part| @reads.unshift(r.byteslice(n..)) if r.bytesize > n }
  end

  def write(s) = (@calls << [:write, s.b]) && s.bytesize
end

# A Thrift::Socket (or UNIXSocket) whose handle is one end of a UNIX socket pair; the other end is yielded.
def unix_pair(klass = Thrift::Socket, timeout: nil)
  ours, peer = UNIXSocket.pair
  trans = klass == Thrift::UNIXSocket ? klass.new("unused", timeout) : klass.new("localhost", 9090, timeout)
  trans.handle = ours
  [trans, peer]
end

# A Thrift::Socket connected over TCP loopback, and the server's end of the connection.
def tcp_pair
  server = TCPServer.new("127.0.0.1", 0)
  trans = Thrift::Socket.new("127.0.0.1", server.addr[1])
  trans.open
  peer = server.accept
  server.close
  [trans, peer]
end

# The IO methods called on `handle` while the block runs, and the Ruby methods of `socket` that ran (which differ by
# design: the native calls skip Socket#read, BaseTransport#read_all and open?).
def io_calls(handle, socket)
  calls = []
  ruby_calls = []
  trace = TracePoint.new(:c_call, :call) do |tp|
    if tp.event == :call
      ruby_calls << tp.method_id if tp.self.equal?(socket)
    elsif tp.self.equal?(handle) && tp.defined_class <= IO
      calls << tp.method_id
    end
  end
  result = trace.enable { yield }
  [result, calls, ruby_calls.uniq.sort]
end

def handle_state(trans)
  h = trans.handle
  return :nil if h.nil?
  return [:double, h.calls] if h.is_a?(HandleDouble)

  h.closed? ? :closed : :open
end

# The message of the TransportException the block raises (nil if it raises none), so that a case goes on after it.
def failure_message
  yield
  nil
rescue Thrift::TransportException => e
  e.message
end

# One case: `setup` makes [transport stack, socket transport, peer]; `calls` runs on the stack.
def run_case(name, setup)
  stack, socket, peer = setup.call
  handle = socket.handle
  outcome, calls, ruby_calls = io_calls(handle, socket) do
    Outcome.ok(yield(stack, peer))
  rescue StandardError => e
    @cause = e.cause && [e.cause.class.name, e.cause.message]
    Outcome.failed(e)
  end
  cause = @cause
  @cause = nil
  [name, outcome, cause, handle_state(socket), calls, ruby_calls]
ensure
  peer.close if peer.respond_to?(:close) && !peer.closed?
  socket.handle.close if socket&.handle.respond_to?(:closed?) && !socket.handle.closed?
end

FRAMED = ->(klass = Thrift::Socket, **opts) { -> { unix_pair(klass, **opts).then { |s, p| [Thrift::FramedTransport.new(s), s, p] } } }
BUFFERED = ->(klass = Thrift::Socket, **opts) { -> { unix_pair(klass, **opts).then { |s, p| [Thrift::BufferedTransport.new(s), s, p] } } }
FRAMED_TCP = -> { tcp_pair.then { |s, p| [Thrift::FramedTransport.new(s), s, p] } }
FRAMED_DOUBLE = lambda do |reads|
  lambda do
    s = Thrift::Socket.new
    s.handle = HandleDouble.new(reads)
    [Thrift::FramedTransport.new(s), s, nil]
  end
end

class SocketSubclass < Thrift::Socket; end

cases = []
add = ->(name, setup, &calls) { cases << [name, setup, calls] }

add.call("framed: two frames, read in pieces", FRAMED.call) do |t, peer|
  peer.write(frame("hello, world") + frame("x" * 300))
  [t.read(5), t.read(100), t.read_byte, t.read_all(250), t.read(100)]
end
add.call("framed: frames after a large one, a frozen @rbuf, slices kept", FRAMED.call) do |t, peer|
  peer.write(frame("L" * 70_000) + frame("a" * 50) + frame("b" * 40) + frame("c" * 30) + frame("d" * 20))
  large = t.read(70_000)
  kept = t.read(30) # a slice of the frame's String, taken before the next frame is read
  rest = t.read(100)
  t.instance_variable_get(:@rbuf).freeze
  [large.bytesize, kept, rest, t.read(40), t.read(30), t.read_byte, t.read_all(19), kept]
end
add.call("framed: a whole frame read as one slice, then the socket closed", FRAMED.call) do |t, peer|
  peer.write(frame("f" * 1000))
  whole = t.read(1000)
  t.instance_variable_get(:@transport).close
  [whole.bytesize, t.read(1)]
end
add.call("framed: a frame over 1 MiB cut short, then a read", FRAMED.call) do |t, peer|
  peer.write([2 << 20].pack("N") + "g" * 100)
  peer.close
  [failure_message { t.read(1) }, t.read(1)]
end
add.call("framed: UNIXSocket transport", FRAMED.call(Thrift::UNIXSocket)) do |t, peer|
  peer.write(frame("abc"))
  [t.read(3)]
end
add.call("framed: read_into_buffer across frames", FRAMED.call) do |t, peer|
  peer.write(frame("ab") + frame("cdef"))
  buf = "\0" * 5
  [t.read_into_buffer(buf, 5), buf]
end
add.call("framed: a frame in two writes, the second after a pause", FRAMED.call) do |t, peer|
  data = frame("y" * 1000)
  peer.write(data[0, 300])
  writer = Thread.new { sleep 0.3; peer.write(data[300..]) }
  [t.read(1000).bytesize].tap { writer.join }
end
add.call("framed: the header in two writes", FRAMED.call) do |t, peer|
  data = frame("z")
  peer.write(data[0, 2])
  writer = Thread.new { sleep 0.3; peer.write(data[2..]) }
  [t.read(1)].tap { writer.join }
end
# A frame that came whole is read with its size in one read (transports/socket/frame.rs): what came with it of the
# next one goes back to the handle, whose own reads find it first.
add.call("framed: a frame and part of the next in one write, then the rest", FRAMED.call) do |t, peer|
  data = frame("first") + frame("second frame")
  peer.write(data[0, 14])
  first = t.read(5)
  writer = Thread.new { sleep 0.1; peer.write(data[14..]) }
  [first, t.read(12)].tap { writer.join }
end
add.call("framed: after a frame, the handle read directly", FRAMED.call) do |t, peer|
  peer.write(frame("one") + "raw bytes")
  [t.read(3), t.instance_variable_get(:@transport).handle.readpartial(100)]
end
add.call("framed: an empty frame, then one", FRAMED.call) do |t, peer|
  peer.write(frame("") + frame("abc"))
  [t.read(3), t.read(3)]
end
add.call("framed: the peer closes mid-frame", FRAMED.call) do |t, peer|
  peer.write(frame("q" * 100)[0, 40])
  peer.close
  t.read(10)
end
add.call("framed: the peer closes mid-header", FRAMED.call) do |t, peer|
  peer.write("\0\0")
  peer.close
  t.read(1)
end
add.call("framed: the peer closes before anything", FRAMED.call) do |t, peer|
  peer.close
  t.read(1)
end
add.call("framed: a read after the failed read", FRAMED.call) do |t, peer|
  peer.close
  begin
    t.read(1)
  rescue Thrift::TransportException
    nil
  end
  t.read(1)
end
add.call("framed: our end closed", FRAMED.call) do |t, _peer|
  t.instance_variable_get(:@transport).handle.close
  t.read(1)
end
add.call("framed: the socket closed (handle nil)", FRAMED.call) do |t, _peer|
  t.instance_variable_get(:@transport).close
  t.read(1)
end
add.call("framed: write and flush", FRAMED.call) do |t, peer|
  t.write("hello")
  t.write("world".b)
  r = t.flush
  [r, peer.read(14)]
end
add.call("framed: flush after the peer closed", FRAMED.call) do |t, peer|
  peer.close
  t.write("x" * 10)
  t.flush
  t.write("x" * 70_000)
  t.flush
end
# IO#write converts what it writes (from UTF-8, to UTF-16LE): the native write, which does not, must not serve it.
{ "framed" => [FRAMED, 12], "buffered" => [BUFFERED, 4] }.each do |name, (stack, converted_size)|
  add.call("#{name}: a handle that converts what it writes", stack.call) do |t, peer|
    t.instance_variable_get(:@transport).handle.set_encoding("UTF-16LE", "UTF-8")
    t.write("hi")
    t.flush
    [peer.read(converted_size)]
  end
end
add.call("framed: a large frame", FRAMED.call) do |t, peer|
  payload = Random.new(1).bytes(300_000) # one object: the cases also run under GC.stress
  t.write(payload)
  reader = Thread.new { peer.read(300_004) }
  t.flush
  [reader.value == frame(payload)]
end
add.call("framed: write on a closed socket", FRAMED.call) do |t, _peer|
  t.instance_variable_get(:@transport).close
  t.write("x")
  t.flush
end
add.call("framed: with a timeout", FRAMED.call(timeout: 5)) do |t, peer|
  peer.write(frame("timed"))
  [t.read(5)]
end
# Timed sockets: thrift master's read_nonblock and write_nonblock, with a wait (transports/socket/timed.rs); the
# Ruby methods before master.
add.call("framed, timed: a frame in two writes, the second after a pause", FRAMED.call(timeout: 5)) do |t, peer|
  data = frame("p" * 500)
  peer.write(data[0, 2])
  writer = Thread.new { sleep 0.2; peer.write(data[2, 200]); sleep 0.2; peer.write(data[202..]) }
  [t.read(500).bytesize].tap { writer.join }
end
add.call("framed, timed: two frames in one write", FRAMED.call(timeout: 5)) do |t, peer|
  peer.write(frame("timed one") + frame("timed two"))
  [t.read(9), t.read(9)]
end
add.call("framed, timed: the peer closes mid-frame", FRAMED.call(timeout: 2.5)) do |t, peer|
  peer.write(frame("q" * 100)[0, 40])
  peer.close
  t.read(10)
end
add.call("framed, timed: the frame's rest never comes", FRAMED.call(timeout: 0.3)) do |t, peer|
  peer.write(frame("q" * 100)[0, 40])
  t.read(10)
end
add.call("framed, timed: our end closed", FRAMED.call(timeout: 5)) do |t, _peer|
  t.instance_variable_get(:@transport).handle.close
  t.read(1)
end
add.call("framed, timed: write and flush, then read", FRAMED.call(timeout: 5)) do |t, peer|
  t.write("timed write")
  r = t.flush
  peer.write(frame("answer"))
  [r, peer.read(15), t.read(6)]
end
add.call("framed, timed: a large frame the peer reads slowly", FRAMED.call(timeout: 5)) do |t, peer|
  payload = Random.new(2).bytes(600_000)
  t.write(payload)
  reader = Thread.new { sleep 0.1; peer.read(600_004) }
  t.flush
  [reader.value == frame(payload)]
end
add.call("framed, timed: a write the peer never reads", FRAMED.call(timeout: 0.3)) do |t, _peer|
  t.write("w" * 3_000_000)
  t.flush
end
add.call("framed, timed: flush after the peer closed", FRAMED.call(Thrift::UNIXSocket, timeout: 5)) do |t, peer|
  peer.close
  t.write("x" * 100_000)
  t.flush
end
add.call("buffered, timed: reads and a write", BUFFERED.call(timeout: 1)) do |t, peer|
  peer.write("0123456789" * 500)
  t.write("abc")
  t.flush
  [t.read(3), t.read_byte, t.read_all(4000), peer.read(3)]
end
add.call("framed, timed: a Rational timeout (the Ruby methods)", FRAMED.call(timeout: 5r)) do |t, peer|
  peer.write(frame("rational"))
  [t.read(8)]
end
add.call("framed, timed: a ServerSocket's accepted socket", lambda {
  server = Thrift::ServerSocket.new("127.0.0.1", 0)
  server.listen
  peer = TCPSocket.new("127.0.0.1", server.handle.addr[1])
  socket = server.accept
  server.close
  [Thrift::FramedTransport.new(socket), socket, peer]
}) do |t, peer|
  peer.write(frame("accepted"))
  t.write("back")
  t.flush
  [t.read(8), peer.read(8), t.instance_variable_get(:@transport).timeout]
end
add.call("framed: a timeout of 0 (untimed)", FRAMED.call(timeout: 0)) do |t, peer|
  peer.write(frame("zero"))
  [t.read(4)]
end
add.call("framed: a timeout that expires", FRAMED.call(timeout: 0.2)) do |t, _peer|
  t.read(1)
end
add.call("framed: a Socket subclass", -> { unix_pair(SocketSubclass).then { |s, p| [Thrift::FramedTransport.new(s), s, p] } }) do |t, peer|
  peer.write(frame("sub"))
  [t.read(3)]
end
add.call("framed over TCP: reset by the peer", FRAMED_TCP) do |t, peer|
  peer.setsockopt(Socket::SOL_SOCKET, Socket::SO_LINGER, [1, 0].pack("ii"))
  peer.write(frame("r")[0, 3])
  sleep 0.05
  peer.close
  sleep 0.05
  t.read(1)
end
add.call("framed over TCP: a frame", FRAMED_TCP) do |t, peer|
  peer.write(frame("tcp!"))
  t.write("back")
  t.flush
  [t.read(4), peer.read(8)]
end
add.call("framed: a handle double", FRAMED_DOUBLE.call([frame("dbl")[0, 2], frame("dbl")[2..]])) do |t, _|
  t.write("w")
  t.flush
  [t.read(3)]
end
add.call("framed: a handle double that raises", FRAMED_DOUBLE.call([Errno::ECONNRESET.new])) do |t, _|
  t.read(1)
end
add.call("buffered: reads", BUFFERED.call) do |t, peer|
  peer.write("0123456789" * 500)
  [t.read(3), t.read_byte, t.read_all(4000), t.read(2000).bytesize]
end
add.call("buffered: slices kept across refills, a frozen @rbuf", BUFFERED.call) do |t, peer|
  peer.write(("0123456789" * 2000).b)
  first = t.read(4096) # the whole first refill, which the next refill replaces
  second = t.read(10)
  t.instance_variable_get(:@rbuf).freeze
  [first.bytesize, first[0, 12], second, t.read(5000).bytesize, t.read(4000).bytesize, t.read_byte, first[-3..]]
end
add.call("buffered: a whole refill read as one slice, then the socket closed", BUFFERED.call) do |t, peer|
  peer.write("s" * 1000)
  whole = t.read(1000) # a slice to the end of @rbuf, which then shares its bytes
  t.instance_variable_get(:@transport).close
  [whole.bytesize, t.read(1)]
end
add.call("buffered: read(0) refills with bytes unread, and fails", BUFFERED.call) do |t, peer|
  peer.write("abcdef")
  first = t.read(2)
  sleep 0.05
  peer.close
  [first, failure_message { t.read(0) }, t.read(4)]
end
add.call("buffered: write and flush", BUFFERED.call) do |t, peer|
  t.write("abc")
  r = t.flush
  [r, t.flush, peer.read(3)]
end
add.call("buffered: the peer closes", BUFFERED.call) do |t, peer|
  peer.write("ab")
  peer.close
  [t.read(2), t.read(1)]
end
add.call("buffered: flush after the peer closed", BUFFERED.call(Thrift::UNIXSocket)) do |t, peer|
  peer.close
  t.write("x" * 100_000)
  t.flush
end
# Last two: they change UNIXSocket and BasicSocket for the rest of the process. A handle class's IO methods are
# vouched for once (transports/socket.rs, HANDLE_METHODS): one prepended later sends the calls to the Ruby methods.
add.call("framed: readpartial prepended on UNIXSocket after a read (the Ruby methods)", FRAMED.call) do |t, peer|
  peer.write(frame("before"))
  first = t.read(6)
  $partial_reads = 0
  UNIXSocket.prepend(Module.new { def readpartial(*) = ($partial_reads += 1) && super })
  peer.write(frame("after"))
  [first, t.read(5), $partial_reads]
end
add.call("framed, timed: read_nonblock prepended on BasicSocket (the Ruby methods)", FRAMED.call(timeout: 5)) do |t, peer|
  $nonblock_reads = 0
  BasicSocket.prepend(Module.new { def read_nonblock(*, **) = ($nonblock_reads += 1) && super })
  peer.write(frame("prepended"))
  [t.read(9), $nonblock_reads]
end

GC.stress = GcStress.setting if ENV["GC_STRESS"]
out = cases.map { |name, setup, calls| run_case(name, setup, &calls) }
GC.stress = false
$stdout.write Marshal.dump(out)
