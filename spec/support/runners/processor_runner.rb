# frozen_string_literal: true

# Thrift::Processor's methods with one accelerator, for the differential spec of the native processor
# (rpc/processor.rs): one process per accelerator, the same cases, each a message in a recording protocol double
# (fixtures/rpc_doubles.rb) handed to a processor whose handler and logger record what they are asked.
#   ruby processor_runner.rb ACCELERATOR -> Marshal [[case name, outcome, calls, handler calls, logged lines], ...]
#   (GC_STRESS=1: each `process` under GC.stress)
# outcome: [:ok, inspect of what `process` answered] or the exception; a logged line is kept to its first line (the
# rest is the backtrace, whose frames differ between a Ruby and a native `process`) and its line count (at least 2).
require_relative "../../../test_support/accelerator"
require_relative "../../../test_support/gc_stress"
require_relative "outcome"

Accelerator.load(ARGV.fetch(0))
require_relative "../fixtures/rpc_doubles"
$stdout.binmode

T = Thrift::MessageTypes

# Records its calls; `ping` answers, `boom` raises, `deep` raises what `rescue => e` does not catch.
class Handler
  attr_reader :calls

  def initialize = (@calls = [])
  def ping(n) = (@calls << [:ping, n]) && "pong #{n}"
  def boom(_n) = (@calls << [:boom]) && raise(ArgumentError, "boom")
  def deep(_n) = (@calls << [:deep]) && raise(NotImplementedError, "deep")
  def oneway(n) = (@calls << [:oneway, n]) && nil
end

class LoggerDouble
  attr_reader :lines

  def initialize = (@lines = [])
  def debug(line) = (@lines << [:debug, line.lines.first.chomp, line.lines.size >= 2])
end

class TestProcessor
  include Thrift::Processor

  RESULT = Result

  def process_ping(seqid, iprot, oprot)
    args = read_args(iprot, Args)
    result = self.class::RESULT.new
    result.success = @handler.ping(args.n)
    write_result(result, oprot, "ping", seqid)
  end

  def process_boom(seqid, iprot, oprot)
    args = read_args(iprot, Args)
    @handler.boom(args.n)
    write_result(Result.new, oprot, "boom", seqid)
  end

  def process_deep(seqid, iprot, oprot)
    args = read_args(iprot, Args)
    @handler.deep(args.n)
    write_result(Result.new, oprot, "deep", seqid)
  end

  def process_oneway(_seqid, iprot, _oprot)
    args = read_args(iprot, Args)
    @handler.oneway(args.n)
  end

  private

  def process_hidden(seqid, iprot, oprot) = write_result(Result.new, oprot, "hidden", seqid)
end

# Answers methods it does not define (respond_to_missing? and method_missing).
class DynamicProcessor < TestProcessor
  def respond_to_missing?(name, include_all = false) = name.to_s.start_with?("process_dyn") || super

  def method_missing(name, *args)
    return super unless name.to_s.start_with?("process_dyn")

    seqid, iprot, oprot = args
    read_args(iprot, Args)
    write_result(Result.new(success: name.to_s), oprot, "dyn", seqid)
  end
end

class OverridingProcessor < TestProcessor
  def respond_to?(name, include_all = false) = (@asked ||= []) << name && super
  def write_error(*args) = (@errors ||= []) << args[2] && super
  def read_args(iprot, args_class) = (@read ||= 0) && (@read += 1) && super
end

class ProcessorWithSend < TestProcessor
  def send(name, *args) = (@sent ||= []) << name.to_s && super
end

# A result whose class writes something of its own first (struct_codec/calls.rs writes a result without a call only
# where its class keeps Thrift::Struct's write).
class OwnWriteResult < Result
  def write(prot)
    prot.write_i32(99)
    super
  end
end

class OwnWriteProcessor < TestProcessor
  RESULT = OwnWriteResult
end

# A name whose to_s answers no String.
class NameWithoutString
  def to_s = nil
  def inspect = "#<NameWithoutString>"
end

def message(name, type, seqid, args = Args.new(n: 1)) = { script: begin_answer(name, type, seqid), input: body(args) }

def begin_answer(name, type, seqid) = { read_message_begin: ->(*) { [name, type, seqid] } }

CASES = {
  "a call" => [TestProcessor, message("ping", T::CALL, 7)],
  "a oneway call" => [TestProcessor, message("oneway", T::ONEWAY, 8)],
  "an unknown method" => [TestProcessor, message("nope", T::CALL, 9)],
  "a private method" => [TestProcessor, message("hidden", T::CALL, 9)],
  "a handler that raises" => [TestProcessor, message("boom", T::CALL, 10)],
  "a handler that raises what rescue does not catch" => [TestProcessor, message("deep", T::CALL, 11)],
  "a REPLY sent to the server" => [TestProcessor, message("ping", T::REPLY, 12)],
  "an EXCEPTION sent to the server" => [TestProcessor, message("ping", T::EXCEPTION, 13)],
  "a message type that is no Integer" => [TestProcessor, message("ping", nil, 14)],
  "a Symbol name" => [TestProcessor, message(:ping, T::CALL, 15)],
  "a Symbol name of no method" => [TestProcessor, message(:nope, T::CALL, 15)],
  "a name no Symbol has" => [TestProcessor, message("never_seen_name_q7z", T::CALL, 16)],
  "a name with a colon" => [TestProcessor, message("Svc:ping", T::CALL, 17)],
  "respond_to_missing?" => [DynamicProcessor, message("dynamic", T::CALL, 18)],
  "a processor's own respond_to?, write_error and read_args" => [OverridingProcessor, message("nope", T::CALL, 19)],
  "a processor's own respond_to? for a known method" => [OverridingProcessor, message("ping", T::CALL, 20)],
  "a processor's own send" => [ProcessorWithSend, message("ping", T::CALL, 21)],
  "read_message_begin answers no Array" => [TestProcessor, { script: { read_message_begin: ->(*) { "ping" } }, input: body(Args.new(n: 2)) }],
  "a name whose to_s is no String" => [TestProcessor, message(NameWithoutString.new, T::CALL, 23)],
  "a message type whose to_s is no String" => [TestProcessor, message("ping", Class.new { def to_s = 7 }.new, 24)],
  "a handler that raises, then the error reply fails (the cause)" => [
    TestProcessor, { script: begin_answer("boom", T::CALL, 25).merge(write_message_begin: ->(*) { raise IOError, "peer gone" }),
                     input: body(Args.new(n: 1)) },
  ],
  "a binary method name" => [TestProcessor, message("caf\xC3".b, T::CALL, 26)],
  "a damaged argument struct" => [TestProcessor, { script: begin_answer("ping", T::CALL, 22), input: "\x08\x00" }],
  "a result class with its own write" => [OwnWriteProcessor, message("ping", T::CALL, 27)],
}.freeze

# Cases on real protocols, no doubles: a message in a memory buffer (or in frames) read by the protocol the
# accelerator gives (ours reads the header natively, the name kept as bytes), the reply written by the same protocol
# class into a memory buffer; the log holds the reply's bytes. "(C's errors)": errors the C accelerator raises
# otherwise than pure Ruby, compared with C alone.
def protocol_class(kind) = kind == :compact ? Thrift::CompactProtocol : Accelerator.protocol_class("binary")

# A CALL's bytes; `strict: false`, a binary header of the old style (the name's length, the name, the type, the seqid),
# made by hand so that a name of any bytes can be sent.
def request(kind, name, type, seqid, strict: true)
  out = Thrift::MemoryBufferTransport.new
  prot = protocol_class(kind).new(out)
  if strict
    prot.write_message_begin(name, type, seqid)
  else
    out.write([name.bytesize].pack("N") + name.b + [type].pack("C") + [seqid].pack("N"))
  end
  Args.new(n: 3).write(prot)
  prot.write_message_end
  out.read(out.available)
end

def in_frames(bytes, *cuts)
  [0, *cuts, bytes.bytesize].each_cons(2).map { |a, b| [b - a].pack("N") + bytes.byteslice(a, b - a) }.join
end

def serve(kind, bytes, frames: false, strict: true, spy: false)
  trans = Thrift::MemoryBufferTransport.new(bytes)
  trans = Thrift::FramedTransport.new(trans) if frames
  iprot = strict ? protocol_class(kind).new(trans) : protocol_class(kind).new(trans, false, true)
  calls = []
  iprot.define_singleton_method(:read_message_begin) { (calls << :read_message_begin) && super() } if spy
  reply = Thrift::MemoryBufferTransport.new
  [iprot, protocol_class(kind).new(reply), -> { [[:reply, reply.read(reply.available).inspect], *calls.map { [_1] }] }]
end

REAL_CASES = %i[binary compact].flat_map do |kind|
  [
    ["#{kind}: a call", -> { serve(kind, request(kind, "ping", T::CALL, 31)) }],
    ["#{kind}: an unknown method", -> { serve(kind, request(kind, "nope", T::CALL, 32)) }],
    ["#{kind}: an unknown method of a long name", -> { serve(kind, request(kind, "n" * 300, T::CALL, 33)) }],
    ["#{kind}: a handler that raises", -> { serve(kind, request(kind, "boom", T::CALL, 34)) }],
    ["#{kind}: a REPLY sent to the server", -> { serve(kind, request(kind, "ping", T::REPLY, 35)) }],
    ["#{kind}: a call in frames, the name across two", -> { serve(kind, in_frames(request(kind, "ping", T::CALL, 36), 7), frames: true) }],
    ["#{kind}: a singleton read_message_begin", -> { serve(kind, request(kind, "ping", T::CALL, 37), spy: true) }],
    ["#{kind}: the header cut in the name (C's errors)", -> { serve(kind, request(kind, "ping", T::CALL, 38).byteslice(0, 7)) }],
  ]
end
REAL_CASES.push(
  ["binary: an old-style header", -> { serve(:binary, request(:binary, "ping", T::CALL, 39, strict: false), strict: false) }],
  ["binary: an old-style header, a binary unknown name", lambda {
    serve(:binary, request(:binary, "caf\xC3".b, T::CALL, 40, strict: false), strict: false)
  }],
)

# What `processor.process(iprot, oprot)` answers or raises (under GC.stress with GC_STRESS=1).
def process_outcome(processor, iprot, oprot)
  GC.stress = GcStress.setting if ENV["GC_STRESS"]
  answer = processor.process(iprot, oprot)
  GC.stress = false
  Outcome.ok(answer.inspect)
rescue StandardError, NotImplementedError => e
  GC.stress = false
  Outcome.failed(e, Outcome.first_line(e).gsub(/0x\h+/, "0x")) + [e.cause && [e.cause.class.name, e.cause.message]]
end

real = REAL_CASES.map do |name, setup|
  iprot, oprot, log = setup.call
  handler = Handler.new
  logger = LoggerDouble.new
  outcome = process_outcome(TestProcessor.new(handler, logger), iprot, oprot)
  [name, outcome, log.call, handler.calls, logger.lines, []]
end

out = CASES.map do |name, (klass, setup)|
  log = []
  double = TransportDouble.new(setup.fetch(:input).b)
  double.log = log
  prot = ProtocolDouble.new(double, log, setup.fetch(:script))
  handler = Handler.new
  logger = LoggerDouble.new
  processor = klass.new(handler, logger)
  outcome = process_outcome(processor, prot, prot)
  own = processor.instance_variables.sort.reject { |i| %i[@handler @logger].include?(i) }
  state = own.map { |i| [i, processor.instance_variable_get(i).inspect] }
  log = log.map { |entry| entry.map { |part| part.is_a?(String) ? part.gsub(/0x\h+/, "0x") : part } }
  [name, outcome, log, handler.calls, logger.lines, state]
end
$stdout.write Marshal.dump(out + real)
