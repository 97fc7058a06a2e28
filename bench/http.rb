# frozen_string_literal: true

# One accelerator's Thrift calls over HTTP, as HTTP clients and Rack/WEBrick-style servers make them: the generated
# BenchService::Bench client over a Thrift::HTTPClientTransport with the plain Thrift::BinaryProtocol (what
# BinaryProtocolFactory gives), `small` answering the small benchmark struct and `large` the large one.
#   - "replay": the network removed. Net::HTTP#post answers the reply captured once (its sequence id set to the
#     request's), so a call is the client's own work: the request written into the transport's buffer, `flush` (its
#     Net::HTTP object, the POST answered at once), the reply read from the response it holds.
#   - "webrick": a real call to a WEBrick server on loopback (forked, the same accelerator loaded; Debian's
#     ruby-webrick) whose servlet runs the processor over an IOStreamTransport over StringIOs, the request body in and
#     the answer out; a new connection per call, as HTTPClientTransport makes. Client and server share one CPU
#     (BENCH_RPC_CPU, as bench/rpc.rb's).
# Calls per second over one window, and the objects the client allocates per call; one JSON line per measurement.
#   ruby bench/http.rb pure|c|c-master|ours [seconds per measurement]
# BENCH_ONLY="replay large" (selection.rb): that measurement alone.

require "json"
require "socket"
require "stringio"
require_relative "../test_support/accelerator"
require_relative "../test_support/codec_types"
require_relative "../test_support/codec_samples"
require_relative "selection"
require_relative "call_rate"

IMPL = ARGV.fetch(0)
SECONDS = Float(ARGV.fetch(1, "0.5"))
Accelerator.load(IMPL)
require "net/http"
CodecTypes.load_service!(File.expand_path("idl/bench_service.thrift", __dir__))
Accelerator.exit_unless_structs_run

# The server's answers, made once.
class BenchHandler
  SMALL = CodecSamples.small
  LARGE = CodecSamples.large

  def small(_n) = SMALL
  def large(_n) = LARGE
end

PROCESSOR = BenchService::Bench::Processor.new(BenchHandler.new)

# Net::HTTP#post answering a captured reply, whose sequence id (after the strict version word and the name) becomes
# the request's: thrift master's client checks it.
module ReplayedPost
  Response = Struct.new(:code, :body)

  class << self
    attr_accessor :reply
  end

  def post(_path, data, _headers = nil, *)
    reply = ReplayedPost.reply.dup
    at = 8 + data.byteslice(4, 4).unpack1("N")
    reply[8 + reply.byteslice(4, 4).unpack1("N"), 4] = data.byteslice(at, 4)
    Response.new("200", reply)
  end
end

# The reply the processor writes to the client's request for `call`.
def captured_reply(call)
  request = Thrift::MemoryBufferTransport.new
  BenchService::Bench::Client.new(Thrift::BinaryProtocol.new(request)).public_send("send_#{call}", 1)
  reply = Thrift::MemoryBufferTransport.new
  PROCESSOR.process(Thrift::BinaryProtocol.new(request), Thrift::BinaryProtocol.new(reply))
  reply.read(reply.available)
end

def client(url) = BenchService::Bench::Client.new(Thrift::BinaryProtocol.new(Thrift::HTTPClientTransport.new(url)))

def report(op, result)
  puts JSON.generate({ impl: IMPL, op: op }.merge(result))
  $stdout.flush
end

CALLS = %w[small large].freeze

if CALLS.any? { |call| Selection.wanted?("replay #{call}") }
  Net::HTTP.prepend(ReplayedPost)
  CALLS.select { |call| Selection.wanted?("replay #{call}") }.each do |call|
    ReplayedPost.reply = captured_reply(call)
    report("replay #{call}", CallRate.measure(client("http://127.0.0.1:1/rpc"), call, SECONDS))
  end
  ReplayedPost.reply = nil
  ReplayedPost.remove_method(:post) # the real POST again for the calls below
end

webrick = begin
  require "webrick"
  true
rescue LoadError
  # Debian's ruby-webrick serves its own Ruby (bin/setup installs it); a Ruby built from source has none.
  warn "#{IMPL}: no webrick on Ruby #{RUBY_VERSION}: its rows not measured"
  false
end
if webrick && CALLS.any? { |call| Selection.wanted?("webrick #{call}") }
  server = WEBrick::HTTPServer.new(BindAddress: "127.0.0.1", Port: 0, Logger: WEBrick::Log.new(File::NULL),
                                   AccessLog: [])
  server.mount_proc("/rpc") do |req, res|
    output = StringIO.new(+"".b)
    prot = Thrift::BinaryProtocol.new(Thrift::IOStreamTransport.new(StringIO.new(req.body || +""), output))
    PROCESSOR.process(prot, prot)
    res["Content-Type"] = "application/x-thrift"
    res.body = output.string
  end
  port = server.config[:Port]
  pid = fork do
    $stdout.reopen(File::NULL)
    server.start
  end
  server.listeners.each(&:close) # the parent's copies
  begin
    c = client("http://127.0.0.1:#{port}/rpc")
    CALLS.select { |call| Selection.wanted?("webrick #{call}") }.each { |call| report("webrick #{call}", CallRate.measure(c, call, SECONDS)) }
  ensure
    Process.kill(:KILL, pid)
    Process.wait(pid)
  end
end
