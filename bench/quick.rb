# frozen_string_literal: true

# `bin/bench`'s quick first look (about 3 minutes on a 2-core machine): the README's headline rows for pure Ruby, the
# C accelerator and thrift_native, side by side (+YJIT on a Ruby built with it), with progress and the time left.
#   - struct read and write over a MemoryBufferTransport: small and large, binary (BinaryProtocolAccelerated, and the
#     plain BinaryProtocol that BinaryProtocolFactory and the Serializer give); small, compact
#   - framed binary (a FramedTransport over a MemoryBufferTransport), small
#   - JsonProtocol, small
#   - RPC over loopback TCP, framed binary: a small and a large answer, and the floor (the sockets alone)
#   - HTTP (bench/http.rb, plain BinaryProtocol): an HTTPClientTransport call with the network removed (its POST
#     answers a captured reply), small and large; a real call to a WEBrick servlet over IOStreamTransport, large
#   - the GzipWriter and GzipReader pipe recipes (Zlib against ThriftNative), shortened
# then the chart (bench/chart.rb: bench/results/headline.svg) and its rows as a table. Shorter measurements than
# bench/run.rb's (BENCH_QUICK=1 in the children: fewer structs and repetitions, selection.rb), 2 rounds that take the
# accelerators in turn; the JSON goes to bench/results/headline/ (BENCH_RESULTS), apart from the full run's.
# The C accelerator is thrift master's where THRIFT_MASTER_RB is set (bin/bench sets it from the shared snapshot),
# else the loaded thrift's; the RPC rows run all three on master's library when its compiler
# (THRIFT_MASTER_COMPILER) is there too, as the generated client must come from the library's own compiler.
# A section that fails is reported and the run goes on; the exit status is 1 if any failed.
#   ruby bench/quick.rb [seconds per RPC measurement, default 0.3]

ENV["BENCH_RESULTS"] ||= File.join(__dir__, "results", "headline")
ENV["BENCH_QUICK"] = "1"
ARGV[0] ||= "0.3"
require "rbconfig"
require_relative "driver"
require_relative "tables"

include Bench # rubocop:disable Style/MixinUsage -- a script, not a library

ROUNDS = 2
C_IMPL = MASTER_BESIDE ? "c-master" : "c"
IMPLS = with_yjit(["pure", C_IMPL, "ours"])
RPC_IMPLS = with_yjit(MASTER_BESIDE && ENV["THRIFT_MASTER_COMPILER"] ? %w[pure-master c-master ours-master] : %w[pure c ours])
RPC_STACK = "tcp framed binary"

# [name, script, arguments, BENCH_ONLY, key, accelerators]
SUITES = [
  ["structs", "structs.rb", ["binary"], nil, "seconds", IMPLS],
  ["structs", "structs.rb", ["plain"], nil, "seconds", IMPLS],
  ["structs", "structs.rb", ["compact"], "small", "seconds", IMPLS],
  ["json_structs", "structs.rb", ["json"], "small", "seconds", IMPLS],
  ["stacks", "stacks.rb", ["binary"], "framed small", "seconds", IMPLS],
  ["rpc", "rpc.rb", [], RPC_STACK, "calls_per_second", RPC_IMPLS + ["floor"]],
  ["http", "http.rb", [], "replay,webrick large", "calls_per_second", RPC_IMPLS]
].freeze

# Seconds per child run on this 2-core machine (pure Ruby, and the others), for the estimate of the time left.
ESTIMATES = {
  "structs binary" => { "pure" => 6, "other" => 2.5 }, "structs compact" => { "pure" => 2, "other" => 1 },
  "structs json" => { "pure" => 3, "other" => 1.5 }, "stacks binary" => { "pure" => 2, "other" => 1.2 },
  "structs plain" => { "pure" => 6, "other" => 2.5 }, "http" => { "pure" => 6, "other" => 4 },
  "rpc" => { "pure" => 2.5, "other" => 2 }, "gzip_writer" => { "other" => 4 }, "gzip_reader" => { "other" => 3 },
  "chart" => { "other" => 0.5 }
}.freeze
steps = SUITES.flat_map { |_, script, args, *, impls| impls.map { |i| ["#{script.delete_suffix(".rb")} #{args.join(" ")}".strip, i] } }
Progress.plan(ESTIMATES, steps * ROUNDS + [%w[gzip_writer other], %w[gzip_reader other], %w[chart other]])

results = Hash.new { |h, k| h[k] = {} }
SUITES.each do |name, script, args, only, key, impls|
  section("#{name} #{args.join(" ")}".strip) do
    by_op = run_rounds(script, *args, key: key, impls: impls, rounds: ROUNDS, higher: key == "calls_per_second",
                       cpu: (RPC_CPU if %w[rpc http].include?(name)), env: { "BENCH_ONLY" => only })
    if %w[rpc http].include?(name)
      results[name] = by_op
    else
      results[name][args.first] = by_op
    end
  end
end

TITLES = {
  "structs" => "Struct read/write over a MemoryBufferTransport (seconds for the count, objects per operation)",
  "json_structs" => "Struct read/write through Thrift::JsonProtocol (the C column: the C accelerator's struct code " \
                    "calling the pure-Ruby protocol's methods; no C accelerator covers JsonProtocol)",
  "stacks" => "Through a FramedTransport over a MemoryBufferTransport, one message (write + flush) per struct",
  "rpc" => "RPC over loopback TCP, framed binary: the generated client calling a forked Thrift::SimpleServer" \
           "#{RPC_CPU ? ", both on CPU #{RPC_CPU}" : ""}; calls per second (higher is better) and objects the client " \
           "allocates per call; floor: the same bytes exchanged by plain Ruby IO#write and IO#read",
  "http" => "HTTP, the generated client over an HTTPClientTransport with the plain BinaryProtocol: replay, the " \
            "network removed (its POST answers a captured reply); webrick, a real call to a WEBrick servlet that runs " \
            "the processor over an IOStreamTransport over StringIOs#{RPC_CPU ? ", both on CPU #{RPC_CPU}" : ""}; " \
            "calls per second (higher is better) and objects the client allocates per call"
}.freeze
TITLES.each do |name, title|
  next unless results.key?(name)

  puts "\n#{title}\n\n"
  puts case name
       when "rpc" then rpc_table(results[name], RPC_IMPLS)
       when "http" then rpc_table(results[name], RPC_IMPLS, floor: false)
       when "json_structs" then struct_table(results[name], IMPLS, versus: %w[pure])
       else struct_table(results[name], IMPLS)
       end
  save(name, results[name])
end

# The gzip pipe recipes, shortened, and the chart: children whose tables print as they come.
[["gzip_writer", "Zlib::GzipWriter and ThriftNative::GzipWriter"], ["gzip_reader", "Zlib::GzipReader and ThriftNative::GzipReader"],
 ["chart", "bench/results/headline.svg"]].each do |script, label|
  section(script) do
    out = script == "chart" ? [ENV.fetch("BENCH_RESULTS"), File.join(__dir__, "results", "headline.svg")] : []
    Progress.step(script, label, "other") do
      $stdout.flush
      system(RbConfig.ruby, File.join(__dir__, "#{script}.rb"), *out) or raise "bench/#{script}.rb failed"
    end
  end
end
finish
