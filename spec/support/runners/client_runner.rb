# frozen_string_literal: true

# Thrift::Client's methods with one accelerator, for the differential spec of the native client (rpc/client.rs): one
# process per accelerator, the same cases, each on a fresh client whose protocols are recording doubles (every call
# logged with its arguments, then passed to a real BinaryProtocol over a memory buffer, or answered from the case's
# script) and whose transport double logs `flush` and `close`.
#   ruby client_runner.rb ACCELERATOR -> Marshal [[case name, outcome, calls, client ivars after], ...] (GC_STRESS=1:
#   each case's calls under GC.stress)
# outcome: [:ok, inspect of the answer] or the exception (outcome.rb); calls: the doubles' log in order.
require_relative "../../../test_support/accelerator"
require_relative "../../../test_support/gc_stress"
require_relative "outcome"
require_relative "../fixtures/key_named"

Accelerator.load(ARGV.fetch(0))
require_relative "../fixtures/rpc_doubles"
$stdout.binmode

# An args class whose instances answer `send` themselves.
class ArgsWithSend < Args
  def send(name, *args) = (@sent ||= []) << name && super
end

class TestClient
  include Thrift::Client
end

class OverridingClient < TestClient
  def send_message_args(args_class, args) = (@overridden = [args_class.name, args]) && super
end

class HashSubclass < Hash; end

# A client whose next_seqid! (master calls it between making the args and writing them) runs `$hook` once.
class SeqidHookClient < TestClient
  def next_seqid!
    hook = $hook
    $hook = nil
    hook&.call
    super
  end
end

# An expected name whose to_s answers no String (interpolation then takes the default form).
class OddName
  def to_s = 42
  def !=(_other) = true
end

MASTER = Thrift::Client.private_method_defined?(:write_message)
# thrift 0.24: sequence ids queued in @pending_seqids and validate_message_begin, without master's write_message.
V024 = !MASTER && Thrift::Client.method_defined?(:validate_message_begin)
V019 = !MASTER && !V024 && Thrift::Client.method_defined?(:receive_message_begin)
T = Thrift::MessageTypes

# A client on doubles: the input holds `input` bytes; `script` answers some protocol calls.
def client(klass = TestClient, input: "", script: {}, fail_on: nil)
  log = []
  double = TransportDouble.new(input.b)
  double.log = log
  double.fail_on = fail_on
  [klass.new(ProtocolDouble.new(double, log, script)), log]
end

# The version's receive sequence, as its generated code calls it.
def receive(c, name, result_class)
  if MASTER || V024
    fname, mtype, rseqid = c.receive_message_begin
    c.validate_message_begin(fname, mtype, rseqid, name)
  elsif V019
    fname, mtype, rseqid = c.receive_message_begin
    c.handle_exception(mtype)
    raise "seqid reply faild" if c.reply_seqid(rseqid) == false
  end
  c.receive_message(result_class)
end

def begin_answer(name, type, seqid) = { read_message_begin: ->(*) { [name, type, seqid] } }

def ivars(c) = c.instance_variables.sort.reject { |i| %i[@iprot @oprot].include?(i) }.map { |i| [i, c.instance_variable_get(i).inspect] }

def scrub(e) = Outcome.failed(e, Outcome.first_line(e).gsub(/0x\h+/, "0x"))

# Each case: the client's set-up (client's arguments) and what is done with it.
CASES = {
  "send_message" => [{}, ->(c) { c.send_message("ping", Args, n: 1, s: "x") }],
  "send_message, String keys" => [{}, ->(c) { c.send_message("ping", Args, "n" => 2) }],
  "send_message, no args" => [{}, ->(c) { c.send_message("ping", Args) }],
  "send_message, an empty Hash" => [{}, ->(c) { c.send_message("ping", Args, {}) }],
  "send_oneway_message" => [{}, ->(c) { c.send_oneway_message("fire", Args, n: 3) }],
  "send_message_args" => [{}, ->(c) { c.send_message_args(Args, s: "only") }],
  "send_message, an unknown key" => [{}, ->(c) { c.send_message("ping", Args, nope: 1) }],
  "send_message, an object key" => [{}, ->(c) { c.send_message("ping", Args, KeyNamed.new("n") => 4) }],
  "send_message, a Hash subclass" => [{}, ->(c) { c.send_message("ping", Args, HashSubclass[n: 5]) }],
  "send_message, seventeen pairs" => [{}, lambda { |c|
    many = Class.new(Args) { attr_accessor(*(1..16).map { |i| :"x#{i}" }) }
    c.send_message("ping", many, (1..16).to_h { |i| [:"x#{i}", i] }.merge(n: 6))
  }],
  "send_message, args whose send is their own" => [{}, ->(c) { c.send_message("ping", ArgsWithSend, n: 7) }],
  "send_message, a wrong value type" => [{}, ->(c) { c.send_message("ping", Args, n: "not a number") }],
  "send_message, the write raises" => [{ script: { write_struct_begin: ->(*) { raise IOError, "write failed" } } },
                                       ->(c) { c.send_message("ping", Args, n: 8) }],
  "send_message, the write raises, and close too" => [
    { script: { write_struct_begin: ->(*) { raise IOError, "write failed" } }, fail_on: [:close] },
    ->(c) { c.send_message("ping", Args, n: 8) },
  ],
  "send_message, the write raises what rescue does not catch" => [
    { script: { write_struct_begin: ->(*) { raise NotImplementedError, "deep" } } }, ->(c) { c.send_message("ping", Args, n: 8) },
  ],
  "send_message, the flush raises" => [{ fail_on: [:flush] }, ->(c) { c.send_message("ping", Args, n: 9) }],
  "send_message, the flush and close raise" => [{ fail_on: %i[flush close] }, ->(c) { c.send_message("ping", Args, n: 9) }],
  "send_message, write_message_begin raises" => [{ script: { write_message_begin: ->(*) { raise IOError, "begin failed" } } },
                                                 ->(c) { c.send_message("ping", Args, n: 9) }],
  "send_message twice, a subclass's send_message_args" => [{ klass: OverridingClient },
                                                           ->(c) { [c.send_message("a", Args, n: 1), c.send_message("b", Args, n: 2)] }],
  "send_message, wrong arity" => [{}, ->(c) { c.send_message("ping") }],
  "a call: send, then receive the reply" => [
    { input: -> { body(Result.new(success: "pong")) }, script: begin_answer("ping", T::REPLY, 0) },
    ->(c) { c.send_message("ping", Args, n: 1) && receive(c, "ping", Result) },
  ],
  "a call: an EXCEPTION reply" => [
    { input: -> { body(Thrift::ApplicationException.new(Thrift::ApplicationException::UNKNOWN_METHOD, "no such method")) },
      script: begin_answer("ping", T::EXCEPTION, 0) },
    ->(c) { c.send_message("ping", Args, n: 1) && receive(c, "ping", Result) },
  ],
  "a call: the wrong method name" => [
    { input: -> { body(Result.new(success: "x")) }, script: begin_answer("pong", T::REPLY, 0) },
    ->(c) { c.send_message("ping", Args, n: 1) && receive(c, "ping", Result) },
  ],
  "a call: a CALL instead of a REPLY" => [
    { input: -> { body(Result.new(success: "x")) }, script: begin_answer("ping", T::CALL, 0) },
    ->(c) { c.send_message("ping", Args, n: 1) && receive(c, "ping", Result) },
  ],
  "a call: the wrong sequence id" => [
    { input: -> { body(Result.new(success: "x")) }, script: begin_answer("ping", T::REPLY, 41) },
    ->(c) { c.send_message("ping", Args, n: 1) && receive(c, "ping", Result) },
  ],
  "a call: a reply with nothing sent" => [
    { input: -> { body(Result.new(success: "x")) }, script: begin_answer("ping", T::REPLY, 0) },
    ->(c) { receive(c, "ping", Result) },
  ],
  "a call: read_message_begin answers no Array" => [
    { input: -> { body(Result.new(success: "x")) }, script: { read_message_begin: ->(*) { :odd } } },
    ->(c) { c.send_message("ping", Args, n: 1) && receive(c, "ping", Result) },
  ],
  "sequence ids: after the largest" => [{}, lambda { |c|
    c.instance_variable_set(:@seqid, 2**31 - 1)
    [c.send_message("a", Args, n: 1), c.send_message("b", Args, n: 2), c.send_oneway_message("c", Args)]
  }],
  "sequence ids: a Float seqid" => [{}, ->(c) { c.instance_variable_set(:@seqid, 1.5) && c.send_message("a", Args, n: 1) }],
  "send_message, a setter that adds to the args Hash" => [{}, lambda { |c|
    $args = { n: 1 }
    c.send_message("ping", ArgsThatChangeTheHash, $args)
  }],
  "send_message, a setter that deletes from the args Hash" => [{}, lambda { |c|
    $args = { n: 1, s: "kept?" }
    klass = Class.new(Args) do
      def n=(value)
        $args.delete(:s)
        super
      end
    end
    c.send_message("ping", klass, $args)
  }],
  "send_message, a key of broken encoding" => [{}, ->(c) { c.send_message("ping", Args, "n\xFF".dup.force_encoding("UTF-8") => 1) }],
  "a call: a binary expected name" => [
    { input: -> { body(Result.new(success: "x")) }, script: begin_answer("other", T::REPLY, 0) },
    ->(c) { c.send_message("caf\xC3".b, Args, n: 1) && receive(c, "caf\xC3".b, Result) },
  ],
  "a call: an expected name whose to_s is no String" => [
    { input: -> { body(Result.new(success: "x")) }, script: begin_answer("other", T::REPLY, 0) },
    ->(c) { c.send_message("x", Args, n: 1) && receive(c, OddName.new, Result) },
  ],
  "send_message, the write raises, then close raises too (the cause)" => [
    { script: { write_struct_begin: ->(*) { raise IOError, "write failed" } }, fail_on: [:close] },
    ->(c) { c.send_message("ping", Args, n: 8) },
  ],
  # struct_codec/calls.rs writes the arguments from the args class's reused instance where nothing can tell it from
  # a new one: a call made while one is written, and a write redefined in between, get new instances.
  "send_message, a call made while the args are written" => [{ script: { write_field_stop: ->(*) { $inner&.call } } }, lambda { |c|
    c.send_message("warm", Args, n: 0)
    $inner = lambda do
      $inner = nil
      c.send_message("inner", Args, n: 2, s: "inner")
    end
    [c.send_message("outer", Args, n: 1, s: "outer"), c.send_message("after", Args, s: "after")]
  }],
  "send_message, next_seqid! redefines the args' write" => [{ klass: SeqidHookClient }, lambda { |c|
    $made = []
    klass = Class.new(Args)
    c.send_message("warm", klass, n: 1)
    $hook = -> { klass.define_method(:write) { |prot| ($made << [:write, n, s]) && super(prot) } }
    [c.send_message("a", klass, n: 2, s: "two"), c.send_message("b", klass, n: 3), $made]
  }],
  "send_message, next_seqid! extends the args object found through ObjectSpace" => [{ klass: SeqidHookClient }, lambda { |c|
    $made = []
    klass = Class.new(Args)
    c.send_message("warm", klass, n: 1)
    extension = Module.new { def write(prot) = ($made << [:extended, n]) && super }
    $hook = -> { ObjectSpace.each_object(klass) { |o| o.extend(extension) unless o.n.nil? } }
    [c.send_message("a", klass, n: 2), c.send_message("b", klass, n: 3), $made]
  }],
  "send_message, repeated and overwritten keys" => [{}, lambda { |c|
    [c.send_message("a", Args, n: 1, s: "one"), c.send_message("b", Args, { n: 2, "n" => 3 }), c.send_message("c", Args)]
  }],
  # struct_codec/calls.rs runs `new`, `read` and `write` without a call only for classes that keep the library's.
  "send_message, an args class with its own new" => [{}, lambda { |c|
    $made = []
    klass = Class.new(Args) { define_singleton_method(:new) { |*a| $made << a && super(*a) } }
    [c.send_message("ping", klass, n: 1), $made]
  }],
  "send_message, an args class with its own initialize and write" => [{}, lambda { |c|
    $made = []
    klass = Class.new(Args) do
      def initialize(*a) = ($made << [:initialize, a]) && super
      def write(prot) = ($made << :write) && super
    end
    [c.send_message("ping", klass, n: 1), $made]
  }],
  "a call: a result class with its own read, then one prepended after a call" => [
    { input: -> { %w[one two three].map { |s| body(Result.new(success: s)) }.join },
      script: { read_message_begin: ->(*) { ["ping", T::REPLY, $seqids.shift] } } },
    lambda { |c|
      $made = []
      $seqids = [0, 1, 2]
      own = Class.new(Result) { def read(prot) = ($made << :read) && super }
      plain = Class.new(Result)
      call = ->(klass, n) { [c.send_message("ping", Args, n: n), receive(c, "ping", klass).success] }
      first = call.call(own, 1)
      second = call.call(plain, 2)
      plain.prepend(Module.new { def read(prot) = ($made << :prepended) && super })
      [first, second, call.call(plain, 3), $made]
    },
  ],
  # struct_codec/calls.rs sets the arguments itself where the setters are thrift_native's and type checking is off.
  "send_message, type checking on, a wrong type, then a right one" => [{}, lambda { |c|
    Thrift.type_checking = true
    begin
      [(c.send_message("ping", Args, n: "not a number") rescue [$!.class, $!.message]), c.send_message("ping", Args, n: 1)]
    ensure
      Thrift.type_checking = false
    end
  }],
  "send_message, a setter redefined after a first call" => [{}, lambda { |c|
    klass = Class.new(Args)
    first = c.send_message("ping", klass, n: 1)
    klass.define_method(:n=) { |v| super(v * 10) }
    [first, c.send_message("ping", klass, n: 2)]
  }],
  "send_message, an args class with its own instance_variable_set" => [{}, lambda { |c|
    $made = []
    # (thrift_native's setters pass the ivar's name as a Symbol made once, the library's a String per call.)
    klass = Class.new(Args) { def instance_variable_set(name, value) = ($made << name.to_s) && super }
    [c.send_message("ping", klass, n: 1, s: "x"), $made]
  }],
  # rpc/client/own.rs runs the client's own methods without a call while its class keeps Thrift::Client's.
  "a client's own method redefined after a first call" => [{ klass: Class.new(TestClient) }, lambda { |c|
    $made = []
    first = c.send_message("a", Args, n: 1)
    name = MASTER || V024 ? :next_seqid! : :send_message_args
    c.class.send(:define_method, name) { |*a| ($made << name) && super(*a) }
    [first, c.send_message("b", Args, n: 2), $made]
  }],
  "a client's own method prepended on one client after a call" => [{ klass: Class.new(TestClient) }, lambda { |c|
    $made = []
    other = c.class.new(c.instance_variable_get(:@iprot))
    first = c.send_message("a", Args, n: 1)
    name = MASTER ? :write_message : :send_message_args
    c.singleton_class.prepend(Module.new { define_method(name) { |*a| ($made << [:singleton, name]) && super(*a) } })
    [first, c.send_message("b", Args, n: 2), other.send_message("c", Args, n: 3), $made]
  }],
  "handle_exception, not an exception" => [{}, ->(c) { c.handle_exception(T::REPLY) }],
  "handle_exception, nil" => [{}, ->(c) { c.handle_exception(nil) }],
}.freeze

# Cases on real protocols, no doubles: a call (send, then receive) whose reply is read by the protocol the accelerator
# gives (ours reads 0.14's receive_message's message type natively, without the name), from a memory buffer or in
# frames. The outcome, and the calls of a singleton read_message_begin where the case adds one.
def message(kind, name, type, seqid, obj)
  out = Thrift::MemoryBufferTransport.new
  prot = protocol_class(kind).new(out)
  prot.write_message_begin(name, type, seqid)
  obj.write(prot)
  prot.write_message_end
  out.read(out.available)
end

def protocol_class(kind) = kind == :compact ? Thrift::CompactProtocol : Accelerator.protocol_class("binary")

def framed(bytes, *cuts)
  [0, *cuts, bytes.bytesize].each_cons(2).map { |a, b| [b - a].pack("N") + bytes.byteslice(a, b - a) }.join
end

def real_call(kind, bytes, frames: false, spy: false, mux: false)
  trans = Thrift::MemoryBufferTransport.new(bytes)
  trans = Thrift::FramedTransport.new(trans) if frames
  iprot = protocol_class(kind).new(trans)
  iprot = Thrift::MultiplexedProtocol.new(iprot, "Calc") if mux
  calls = []
  iprot.define_singleton_method(:read_message_begin) { (calls << :read_message_begin) && super() } if spy
  c = TestClient.new(iprot, protocol_class(kind).new(Thrift::MemoryBufferTransport.new))
  c.send_message("ping", Args, n: 1)
  [receive(c, "ping", Result).success, calls]
end

REPLY = ->(kind, name = "ping") { message(kind, name, T::REPLY, 0, Result.new(success: "pong")) }
EXCEPTION = ->(kind) { message(kind, "ping", T::EXCEPTION, 0, Thrift::ApplicationException.new(7, "it failed")) }
REAL_CASES = %i[binary compact].flat_map do |kind|
  [
    ["#{kind}: a reply", -> { real_call(kind, REPLY.call(kind)) }],
    ["#{kind}: an EXCEPTION reply", -> { real_call(kind, EXCEPTION.call(kind)) }],
    ["#{kind}: a reply in frames, the name across two", -> { real_call(kind, framed(REPLY.call(kind), 6), frames: true) }],
    ["#{kind}: a reply in one frame, a long name", lambda {
      real_call(kind, framed(REPLY.call(kind, "n" * 300)), frames: true)
    }],
    ["#{kind}: a reply cut in the name (C's errors)", -> { real_call(kind, REPLY.call(kind).byteslice(0, 7)) }],
    ["#{kind}: a reply cut in the header (C's errors)", -> { real_call(kind, REPLY.call(kind).byteslice(0, 2)) }],
    ["#{kind}: a singleton read_message_begin", -> { real_call(kind, REPLY.call(kind), spy: true) }],
    ["#{kind}: a reply through a MultiplexedProtocol", -> { real_call(kind, REPLY.call(kind), mux: true) }],
    ["#{kind}: an EXCEPTION reply through a MultiplexedProtocol", -> { real_call(kind, EXCEPTION.call(kind), mux: true) }],
    ["#{kind}: a MultiplexedProtocol with a singleton read_message_begin", lambda {
      real_call(kind, REPLY.call(kind), mux: true, spy: true)
    }],
  ]
end
# Errors the C accelerator raises otherwise than pure Ruby (its memory buffer's EOFError message, its BAD_VERSION code;
# pure Ruby's CompactProtocol raises its bad-header error with no message): "(C's errors)", compared with C alone.
REAL_CASES << ["binary: a bad header (C's errors)", -> { real_call(:binary, "\xFF\x7F\x00\x01ping".b) }]

real = REAL_CASES.map do |name, action|
  outcome = begin
    GC.stress = GcStress.setting if ENV["GC_STRESS"]
    answer = action.call
    GC.stress = false
    Outcome.ok(answer.inspect)
  rescue StandardError => e
    GC.stress = false
    scrub(e)
  end
  [name, outcome, [], []]
end

out = CASES.map do |name, (setup, action)|
  setup = setup.merge(input: setup[:input]&.call || "")
  c, log = client(setup.fetch(:klass, TestClient), **setup.except(:klass))
  outcome = begin
    GC.stress = GcStress.setting if ENV["GC_STRESS"]
    answer = action.call(c)
    GC.stress = false
    Outcome.ok(answer.inspect)
  rescue StandardError, NotImplementedError => e
    GC.stress = false
    scrub(e) + [e.message.encoding.name, e.cause && [e.cause.class.name, e.cause.message]]
  end
  [name, outcome, log.map { |entry| entry.map { |part| part.is_a?(String) ? part.gsub(/0x\h+/, "0x") : part } }, ivars(c)]
end
$stdout.write Marshal.dump(out + real)
