# frozen_string_literal: true

# Where a small RPC call goes (issue 21, measure first): the generated client calling `small` on a server that runs
# Thrift::SimpleServer's loop (`processor.process` per message), forked, over a UNIX socket. For each side: the objects
# it allocates per call, and the Ruby methods that run per call (TracePoint :call and :c_call, counted over CALLS
# calls after a warm-up, in a second pass so that the tracing's own objects do not count).
#
#   ruby bench/rpc_profile.rb pure|c|c-master|ours|ours-master [framed-binary|buffered-compact|multiplexed-binary] [CALLS]
# (multiplexed: framed, the client's protocol a MultiplexedProtocol for service "Bench", the server a
# MultiplexedProcessor with the service registered under that name.)
#
# With RPC_PROFILE_SITES=1 it also lists where the client's objects come from (class, and the Ruby line that made
# them or called the native method that did), per call.
#
# With RPC_PROFILE_TRACE=0 it only makes the calls (CALLS after the warm-up), for callgrind, where each process writes
# its own file:
#   RPC_PROFILE_TRACE=0 valgrind --tool=callgrind --callgrind-out-file=tmp/cg-rpc.%p ruby bench/rpc_profile.rb ours
#   callgrind_annotate --inclusive=yes tmp/cg-rpc.<pid>     # the client's (the parent's) and the server's

require "socket"
require "tmpdir"
require_relative "../test_support/accelerator"
require_relative "../test_support/codec_types"
require_relative "../test_support/codec_samples"

IMPL = ARGV.fetch(0)
STACK = ARGV.fetch(1, "framed-binary")
CALLS = Integer(ARGV.fetch(2, "1000"))
WARM_UP = 200
TRACE = ENV.fetch("RPC_PROFILE_TRACE", "1") != "0"
Accelerator.load(IMPL)
CodecTypes.load_service!(File.expand_path("idl/bench_service.thrift", __dir__))

transport_name, protocol_name = STACK.split("-")
MULTIPLEXED = transport_name == "multiplexed"
TRANSPORT = { "framed" => Thrift::FramedTransport, "buffered" => Thrift::BufferedTransport,
              "multiplexed" => Thrift::FramedTransport }.fetch(transport_name)
PROTOCOL = Accelerator.protocol_class(protocol_name)

# The server's answer, made once.
class ProfileHandler
  SMALL = CodecSamples.small

  def small(_n) = SMALL
end

# Counts the methods that run while `block` does (Class#method => calls), per TracePoint event.
def methods_run
  counts = Hash.new(0)
  trace = TracePoint.new(:call, :c_call) do |tp|
    owner = tp.defined_class
    owner = owner.attached_object if owner.respond_to?(:singleton_class?) && owner.singleton_class? &&
                                      owner.respond_to?(:attached_object)
    counts["#{owner}##{tp.method_id}"] += 1
  end
  trace.enable { yield }
  counts
end

# The client's objects per call by class and the Ruby line that made them (or called the native method that did).
def allocation_sites(calls)
  require "objspace"
  ObjectSpace.trace_object_allocations_start
  GC.disable
  start = GC.stat(:total_allocated_objects)
  calls.times { |i| yield i }
  sites = Hash.new(0)
  ObjectSpace.each_object do |o|
    gen = ObjectSpace.allocation_generation(o)
    next unless gen && ObjectSpace.allocation_sourcefile(o)

    sites["#{o.class} #{ObjectSpace.allocation_sourcefile(o)}:#{ObjectSpace.allocation_sourceline(o)}"] += 1
  end
  total = GC.stat(:total_allocated_objects) - start
  GC.enable
  ObjectSpace.trace_object_allocations_stop
  [total, sites.select { |_, n| n >= calls }]
end

def allocated
  before = GC.stat(:total_allocated_objects)
  yield
  GC.stat(:total_allocated_objects) - before
end

# One side's figures: objects per call, then the methods per call, most frequent first.
def report(side, objects, counts)
  puts "#{side}: #{(objects.to_f / CALLS).round(2)} objects per call; Ruby methods per call " \
       "(#{(counts.values.sum.to_f / CALLS).round(1)} in all):"
  counts.sort_by { |name, n| [-n, name] }.each do |name, n|
    puts format("  %8.2f  %s", n.to_f / CALLS, name)
  end
end

Dir.mktmpdir("thrift_native_rpc_profile") do |dir|
  path = File.join(dir, "profile.sock")
  server_socket = Thrift::UNIXServerSocket.new(path)
  server_socket.listen
  results, writer = IO.pipe
  pid = fork do
    results.close
    processor = BenchService::Bench::Processor.new(ProfileHandler.new)
    if MULTIPLEXED
      processor = Thrift::MultiplexedProcessor.new.tap { |mux| mux.register_processor("Bench", processor) }
    end
    trans = TRANSPORT.new(server_socket.accept)
    prot = PROTOCOL.new(trans)
    serve = proc { processor.process(prot, prot) }
    (WARM_UP + CALLS).times(&serve) # the client's warm-up and its allocation pass
    counts = TRACE ? methods_run { CALLS.times(&serve) } : {}
    objects = allocated { CALLS.times(&serve) }
    writer.write(Marshal.dump([objects, counts]))
    writer.close
    begin
      loop(&serve) # until the client closes
    rescue Thrift::TransportException, IOError, SystemCallError
      exit!(0)
    end
  end
  writer.close
  trans = TRANSPORT.new(Thrift::UNIXSocket.new(path))
  trans.open
  protocol = PROTOCOL.new(trans)
  protocol = Thrift::MultiplexedProtocol.new(protocol, "Bench") if MULTIPLEXED
  client = BenchService::Bench::Client.new(protocol)
  WARM_UP.times { |i| client.small(i) }
  objects = allocated { CALLS.times { |i| client.small(i) } }
  counts = TRACE ? methods_run { CALLS.times { |i| client.small(i) } } : {}
  CALLS.times { |i| client.small(i) } # the server's allocation pass
  sites = ENV["RPC_PROFILE_SITES"] == "1" && allocation_sites(CALLS) { |i| client.small(i) }
  server_objects, server_counts = Marshal.load(results.read)
  trans.close
  Process.wait(pid)
  puts "#{IMPL}, #{STACK}, the small call over a UNIX socket, #{CALLS} calls after #{WARM_UP}:"
  report("client", objects, counts)
  report("server", server_objects, server_counts)
  if sites
    total, by_site = sites
    puts "client objects by site, per call (#{(total.to_f / CALLS).round(2)} in all while tracing):"
    by_site.sort_by { |site, n| [-n, site] }.each { |site, n| puts format("  %6.2f  %s", n.to_f / CALLS, site) }
  end
end
