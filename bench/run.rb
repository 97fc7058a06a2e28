# frozen_string_literal: true

# Every table: pure-Ruby Thrift, the installed C accelerator and thrift_native side by side, in one run (`bin/bench
# --full`, about an hour on a 2-core machine; bench/quick.rb is the few headline rows of `bin/bench`).
# Each accelerator runs in its own child process (only one thrift_native can be loaded at a time); results are
# printed as tables and saved as JSON under bench/results/. A table that fails is reported and the run goes on to the
# others; the exit status is 1 if any failed.
#   ruby bench/run.rb [seconds_per_measurement]
# With THRIFT_MASTER_RB=<apache/thrift checkout>/lib/rb (its ext/ built by you), a column for that newer C
# accelerator is added: Debian's thrift 0.14 has no UUID methods to compare read_uuid with. Master's library also
# brings HeaderTransport: its stacks are measured with master's library under all three (pure-master, c-master,
# ours-master), as is the RPC benchmark, whose clients master wants from its own compiler (THRIFT_MASTER_COMPILER).
# THRIFT_C_VERSION names the version of the thrift on the load path (default 0.14, Debian 12's) in the column labels;
# BENCH_RESULTS is where the JSON goes (default bench/results). `bin/matrix bench-RUBY-THRIFT` sets both.
# On a Ruby built with YJIT (RubyVM::YJIT; bin/rubies builds 3.2, 3.4 and 4.0 so), every accelerator is measured a
# second time with YJIT on (`ruby --yjit`, the "+YJIT" columns), as services run it in production; BENCH_YJIT=0
# leaves them out.

require_relative "driver"
require_relative "tables"

include Bench # rubocop:disable Style/MixinUsage -- a script, not a library

IMPLS = with_yjit(MASTER_BESIDE ? %w[pure c c-master ours] : %w[pure c ours])
MASTER_IMPLS = with_yjit(ENV["THRIFT_MASTER_RB"] ? %w[pure-master c-master ours-master] : [])
RPC_IMPLS = with_yjit(%w[pure c ours] + (MASTER_BESIDE && ENV["THRIFT_MASTER_COMPILER"] ? %w[pure-master c-master ours-master] : []))

# Seconds per child run on this 2-core machine (bench/run.rb 0.5), for the estimate of the time left.
ESTIMATES = {
  "primitives" => { "pure" => 12, "other" => 12 }, "structs" => { "pure" => 40, "other" => 8 },
  "struct_new" => { "other" => 10 }, "stacks" => { "pure" => 110, "other" => 15 }, "rpc" => { "pure" => 60, "other" => 40 },
  "http" => { "pure" => 12, "other" => 8 }
}.freeze
# The struct and stack tables also measure the plain Thrift::BinaryProtocol (BinaryProtocolFactory's, the
# Serializer's), under every accelerator.
STRUCT_PROTOCOLS = %w[binary plain compact].freeze
steps = [*PROTOCOLS.map { |p| "primitives #{p}" }, *STRUCT_PROTOCOLS.map { |p| "structs #{p}" }, "struct_new",
         "primitives json", "structs json", *STRUCT_PROTOCOLS.map { |p| "stacks #{p}" }].product(IMPLS) +
        (MASTER_IMPLS.empty? ? [] : PROTOCOLS.map { |p| "stacks #{p} header" }.product(MASTER_IMPLS)) +
        [["rpc", "floor"], *RPC_IMPLS.map { |i| ["rpc", i] }, *RPC_IMPLS.map { |i| ["http", i] }]
Progress.plan(ESTIMATES, steps * 3)

# Measures one table (the block answers its results), prints its title and table, saves its JSON; a failure is
# reported and the run goes on. Answers the results, or {} when it failed.
def measured_table(json_name, title)
  section(json_name) do
    results = yield
    puts "\n#{title}\n\n"
    puts TABLES.fetch(json_name).call(results)
    save(json_name, results)
    results
  end || {}
end

TABLES = {
  "primitives" => ->(r) { table(r, IMPLS) }, "structs" => ->(r) { struct_table(r, IMPLS) },
  "struct_new" => ->(r) { table(r, IMPLS) }, "json_primitives" => ->(r) { table(r, IMPLS) },
  "json_structs" => ->(r) { struct_table(r, IMPLS, versus: %w[pure]) }, "stacks" => ->(r) { struct_table(r, IMPLS) },
  "header_stacks" => ->(r) { struct_table(r, MASTER_IMPLS) }, "rpc" => ->(r) { rpc_table(r, RPC_IMPLS) },
  "http" => ->(r) { rpc_table(r, RPC_IMPLS, floor: false) }
}.freeze

primitives = measured_table("primitives", "Binary and compact protocol primitives over a MemoryBufferTransport " \
                            "(ns/call and objects/call; 'vs C' = C time / thrift_native time, the newest C measured; " \
                            "n/a: the loaded thrift has no UUID support)") do
  PROTOCOLS.to_h { |protocol| [protocol, run_rounds("primitives.rb", protocol, key: "ns_per_call", impls: IMPLS)] }
end

structs = measured_table("structs", "Struct read/write over a MemoryBufferTransport (total seconds for the count, " \
                         "objects per read or write; a read's objects include the 2 that `Small.new` itself makes and " \
                         "the objects the result holds; n/a under pure Ruby: a thrift before 0.20 cannot write structs " \
                         "on Ruby 3.2+, its BaseProtocol names Fixnum; plain: Thrift::BinaryProtocol under every " \
                         "accelerator, the C column the C accelerator's struct code calling its Ruby methods)") do
  STRUCT_PROTOCOLS.to_h { |protocol| [protocol, run_rounds("structs.rb", protocol, key: "seconds", impls: IMPLS)] }
end

measured_table("struct_new", "`new` of structs and unions (Thrift::Struct#initialize, Thrift::Union#initialize; ns " \
               "and objects per `new`, which count the keyword Hash a call passes; C: the library's own initialize, " \
               "which no C accelerator replaces)") do
  { "-" => run_rounds("struct_new.rb", key: "ns_per_call", impls: IMPLS) }
end

json_primitives = measured_table("json_primitives", "JsonProtocol primitives over a MemoryBufferTransport, each in a " \
                                 "list of them (ns/call and objects/call; the C columns: the pure-Ruby protocol's " \
                                 "methods, which no C accelerator covers, over its MemoryBufferTransport)") do
  { "json" => run_rounds("primitives.rb", "json", key: "ns_per_call", impls: IMPLS) }
end

json = measured_table("json_structs", "Struct read/write through Thrift::JsonProtocol over a MemoryBufferTransport, " \
                      "which no C accelerator covers (the C column: the C accelerator's struct code calling the " \
                      "pure-Ruby protocol's methods; a smaller large struct than above)") do
  { "json" => run_rounds("structs.rb", "json", key: "seconds", impls: IMPLS) }
end

stacks = measured_table("stacks", "Struct read/write through transport stacks, one message (write + flush) per " \
                        "struct: a MemoryBufferTransport, a FramedTransport over one, an IOStreamTransport over " \
                        "StringIOs, an HTTPClientTransport's request buffer and response (its POST left out), a " \
                        "BufferedTransport over an IOStreamTransport of StringIOs (plain: Thrift::BinaryProtocol)") do
  STRUCT_PROTOCOLS.to_h { |protocol| [protocol, run_rounds("stacks.rb", protocol, key: "seconds", impls: IMPLS)] }
end

unless MASTER_IMPLS.empty?
  header = measured_table("header_stacks", "The same through HeaderProtocol over a HeaderTransport over a " \
                          "MemoryBufferTransport (thrift master's library under all three; 'protocol' is the " \
                          "sub-protocol; header-zlib: with the ZLIB transform)") do
    PROTOCOLS.to_h { |protocol| [protocol, run_rounds("stacks.rb", protocol, "header", key: "seconds", impls: MASTER_IMPLS)] }
  end
end

rpc = measured_table("rpc", "RPC: the generated client calling a Thrift::SimpleServer (forked, the same accelerator) " \
                     "over loopback TCP and a UNIX socket#{RPC_CPU ? ", both on CPU #{RPC_CPU}" : ""}; calls per " \
                     "second (higher is better; the best of 3 rounds that take the accelerators in turn; 'vs C': " \
                     "thrift_native / C with the same library; floor: a plain Ruby client and server exchanging " \
                     "frames of the same sizes with IO#write and IO#read, 'vs floor': the floor's calls per second / " \
                     "thrift_native's, how many times the floor's time a call takes) and objects the client " \
                     "allocates per call") do
  run_rounds("rpc.rb", key: "calls_per_second", higher: true, impls: RPC_IMPLS + ["floor"], cpu: RPC_CPU)
end

http = measured_table("http", "HTTP: the generated client over an HTTPClientTransport with the plain " \
                      "BinaryProtocol; replay: the network removed (its POST answers a captured reply); webrick: a " \
                      "real call to a WEBrick servlet (forked) that runs the processor over an IOStreamTransport over " \
                      "StringIOs#{RPC_CPU ? ", both on CPU #{RPC_CPU}" : ""}; calls per second (higher is better) " \
                      "and objects the client allocates per call") do
  run_rounds("http.rb", key: "calls_per_second", higher: true, impls: RPC_IMPLS, cpu: RPC_CPU)
end

if YJIT
  yjit_summary([["primitives", primitives, "ns_per_call"], ["structs", structs, "seconds"],
                ["json_primitives", json_primitives, "ns_per_call"], ["json_structs", json, "seconds"],
                ["stacks", stacks, "seconds"], ["header_stacks", header || {}, "seconds"],
                ["rpc", { "" => rpc }, "calls_per_second"], ["http", { "" => http }, "calls_per_second"]])
end
finish
