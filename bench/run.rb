# frozen_string_literal: true

# Side by side: pure-Ruby Thrift, the installed C accelerator and thrift_native, in one run.
# Each accelerator runs in its own child process (only one thrift_native can be loaded at a time); results are
# printed as a table and saved as JSON under bench/results/.
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

require "json"
require "time"
require "fileutils"
require_relative "../test_support/child_ruby"

SECONDS = ARGV.fetch(0, "0.5")
YJIT = defined?(RubyVM::YJIT) && ENV.fetch("BENCH_YJIT", "1") != "0"
# Each accelerator, then (on a YJIT Ruby) each again under YJIT: "ours+yjit" is "ours" in a `ruby --yjit` child.
def with_yjit(impls) = (impls + (YJIT ? impls.map { |i| "#{i}+yjit" } : [])).freeze
# With thrift master itself on the load path (bin/matrix bench-4.0-master), "c" is master's C accelerator already.
MASTER_LOADED = !ENV["THRIFT_MASTER_RB"].nil? &&
                ENV.fetch("RUBYLIB", "").split(File::PATH_SEPARATOR).include?(File.join(ENV["THRIFT_MASTER_RB"], "lib"))
MASTER_BESIDE = !ENV["THRIFT_MASTER_RB"].nil? && !MASTER_LOADED
IMPLS = with_yjit(MASTER_BESIDE ? %w[pure c c-master ours] : %w[pure c ours])
BASE_LABELS = { "pure" => "pure Ruby", "c" => "C #{ENV.fetch("THRIFT_C_VERSION", "0.14")}", "c-master" => "C master",
                "ours" => "thrift_native", "pure-master" => "pure Ruby (master)",
                "ours-master" => "thrift_native (master)", "floor" => "floor" }.freeze
LABELS = BASE_LABELS.merge(BASE_LABELS.to_h { |i, label| ["#{i}+yjit", "#{label} +YJIT"] }).freeze
MASTER_IMPLS = with_yjit(ENV["THRIFT_MASTER_RB"] ? %w[pure-master c-master ours-master] : [])
RPC_IMPLS = with_yjit(%w[pure c ours] + (MASTER_BESIDE && ENV["THRIFT_MASTER_COMPILER"] ? %w[pure-master c-master ours-master] : []))
# The RPC benchmark's client and server share one CPU (BENCH_RPC_CPU, taskset's list; "" for none): a process woken on
# an idle other core waits about 60 us on this VM, more than a small call takes.
RPC_CPU = (ENV.fetch("BENCH_RPC_CPU", "0") unless ENV["BENCH_RPC_CPU"] == "" || !system("taskset -c 0 true", err: File::NULL))
RESULTS_DIR = File.expand_path(ENV.fetch("BENCH_RESULTS", File.join(__dir__, "results")))

PROTOCOLS = %w[binary compact].freeze

def run_suite(script, *args, impls: IMPLS, cpu: nil)
  results = Hash.new { |h, k| h[k] = {} }
  impls.each do |impl|
    $stderr.print "#{script} #{args.join(" ")} [#{LABELS[impl]}] "
    yjit = impl.end_with?("+yjit") ? ["--yjit"] : []
    ChildRuby.each_line(*yjit, File.expand_path(script, __dir__), impl.delete_suffix("+yjit"), SECONDS, *args,
                        cpu: cpu) do |line|
      row = JSON.parse(line)
      results[row.fetch("op")][impl] = row
      $stderr.print "."
    end
    $stderr.puts
  end
  results
end

# run_suite ROUNDS times, the accelerators taken in turn each round, keeping each measurement's best round by `key`
# (lower is better, or higher with `higher: true`): the VM's speed drifts over minutes, and an accelerator measured
# a minute after another would carry the drift into the comparison. Each child also keeps the best of its own
# repetitions, against shorter disturbances.
ROUNDS = 3

def run_rounds(script, *args, key:, higher: false, impls: IMPLS, cpu: nil)
  better = higher ? ->(y, x) { y[key] > x[key] } : ->(y, x) { y[key] < x[key] }
  Array.new(ROUNDS) { run_suite(script, *args, impls: impls, cpu: cpu) }.reduce do |best, round|
    best.merge(round) { |_op, a, b| a.merge(b) { |_impl, x, y| better.call(y, x) ? y : x } }
  end
end

def fmt_ns(row) = row ? format("%.1f", row["ns_per_call"]) : "n/a"
def fmt_obj(row) = row ? format("%.3f", row["objects_per_call"]) : "n/a"

# The comparisons a table shows, [label, ours, bases]: thrift_native against the first of `bases` measured (the
# newest C, or pure Ruby), and on a YJIT Ruby thrift_native +YJIT against the same +YJIT and against pure Ruby +YJIT.
def comparisons(impls, bases, label)
  ours = (%w[ours ours-master] & impls).first
  list = [["vs #{label}", ours, bases]]
  return list unless YJIT

  list << ["vs #{label} +YJIT", "#{ours}+yjit", bases.map { |b| "#{b}+yjit" }]
  pure = (%w[pure+yjit pure-master+yjit] & impls).first
  list << ["vs pure +YJIT", "#{ours}+yjit", [pure]] if pure && !bases.include?(pure.delete_suffix("+yjit"))
  list
end

# How many times faster `ours` is than the first of `bases` measured: base / ours for a time, ours / base for a rate.
def ratio(by_impl, ours, bases, key, higher: false)
  base = by_impl.values_at(*bases).compact.first
  mine = by_impl[ours]
  return "n/a" unless base && mine

  format("%.2fx", higher ? mine[key] / base[key] : base[key] / mine[key])
end

# The accelerators whose objects per call a table shows: YJIT does not change what a call allocates.
def counted(impls) = impls.reject { |i| i.end_with?("+yjit") }

# results: { protocol => { op => { impl => row } } }
def table(results)
  versus = comparisons(IMPLS, %w[c-master c], "C")
  header = ["protocol", "op", *IMPLS.map { |i| "#{LABELS[i]} ns" }, *versus.map(&:first),
            *counted(IMPLS).map { |i| "#{LABELS[i]} obj" }]
  rows = results.flat_map do |protocol, by_op|
    by_op.map do |op, by_impl|
      [protocol, op, *IMPLS.map { |i| fmt_ns(by_impl[i]) },
       *versus.map { |_, ours, bases| ratio(by_impl, ours, bases, "ns_per_call") },
       *counted(IMPLS).map { |i| fmt_obj(by_impl[i]) }]
    end
  end
  render(header, rows)
end

# results: { protocol => { op => { impl => row } } }
# `versus`: what 'vs' compares thrift_native with, the first of them measured (the newest C, or pure Ruby).
def struct_table(results, impls = IMPLS, versus: %w[c-master c])
  comps = comparisons(impls, versus, versus == %w[pure] ? "pure Ruby" : "C")
  header = ["protocol", "scenario", *impls.map { |i| "#{LABELS[i]} s" }, *comps.map(&:first),
            *counted(impls).map { |i| "#{LABELS[i]} obj/op" }]
  rows = results.flat_map do |protocol, by_op|
    by_op.map do |op, by_impl|
      any = by_impl.values.first
      label = "#{op} (#{any["count"]}x, #{any["bytes"]} B)"
      [protocol, label, *impls.map { |i| by_impl[i] ? format("%.4f", by_impl[i]["seconds"]) : "n/a" },
       *comps.map { |_, ours, bases| ratio(by_impl, ours, bases, "seconds") },
       *counted(impls).map { |i| by_impl[i] ? format("%.2f", by_impl[i]["objects_per_op"]) : "n/a" }]
    end
  end
  render(header, rows)
end

# results: { op => { impl => row } }; higher is better here, so 'vs C' is ours / C, for each library measured, and
# 'vs floor' how many times the floor's time a call of ours takes (floor calls/s / ours).
def rpc_table(results)
  impls = RPC_IMPLS + ["floor"]
  pairs = [%w[ours c], %w[ours-master c-master]].select { |o, _| RPC_IMPLS.include?(o) }
  pairs += pairs.map { |o, c| ["#{o}+yjit", "#{c}+yjit"] } if YJIT
  floors = pairs.map(&:first)
  header = ["call", *impls.map { |i| "#{LABELS[i]} calls/s" }, *pairs.map { |o, c| "#{LABELS[o]} vs #{LABELS[c]}" },
            *floors.map { |o| "#{LABELS[o]} vs floor" }, *counted(RPC_IMPLS).map { |i| "#{LABELS[i]} obj/call" }]
  rows = results.map do |op, by_impl|
    [op, *impls.map { |i| by_impl[i] ? format("%.1f", by_impl[i]["calls_per_second"]) : "n/a" },
     *pairs.map { |o, c| ratio(by_impl, o, [c], "calls_per_second", higher: true) },
     *floors.map { |o| ratio(by_impl, o, ["floor"], "calls_per_second") },
     *counted(RPC_IMPLS).map { |i| by_impl[i] ? format("%.1f", by_impl[i]["objects_per_call"]) : "n/a" }]
  end
  render(header, rows, 1)
end

# `left`: how many leading columns are labels (left-aligned).
def render(header, rows, left = 2)
  widths = header.each_index.map { |i| ([header] + rows).map { |r| r[i].size }.max }
  line = ->(r) { "| " + r.each_with_index.map { |c, i| i < left ? c.ljust(widths[i]) : c.rjust(widths[i]) }.join(" | ") + " |" }
  [line.call(header), "|" + widths.map { |w| "-" * (w + 2) }.join("|") + "|", *rows.map(&line)].join("\n")
end

def save(name, results)
  FileUtils.mkdir_p(RESULTS_DIR)
  path = File.join(RESULTS_DIR, "#{name}.json")
  File.write(path, JSON.pretty_generate(
    recorded_at: Time.now.utc.iso8601, ruby: RUBY_DESCRIPTION, seconds_per_measurement: SECONDS.to_f, results: results
  ))
  puts "\nsaved #{path}"
end

primitives = PROTOCOLS.to_h { |protocol| [protocol, run_rounds("primitives.rb", protocol, key: "ns_per_call")] }
puts "\nBinary and compact protocol primitives over a MemoryBufferTransport (ns/call and objects/call; " \
     "'vs C' = C time / thrift_native time, the newest C measured; n/a: the loaded thrift has no UUID support)\n\n"
puts table(primitives)
save("primitives", primitives)

structs = PROTOCOLS.to_h { |protocol| [protocol, run_rounds("structs.rb", protocol, key: "seconds")] }
puts "\nStruct read/write over a MemoryBufferTransport (total seconds for the count, objects per " \
     "read or write; a read's objects include the 2 that `Small.new` itself makes and the objects the result holds; " \
     "n/a under pure Ruby: a thrift before 0.20 cannot write structs on Ruby 3.2+, its BaseProtocol names Fixnum)\n\n"
puts struct_table(structs)
save("structs", structs)

struct_new = { "-" => run_rounds("struct_new.rb", key: "ns_per_call") }
puts "\n`new` of structs and unions (Thrift::Struct#initialize, Thrift::Union#initialize; ns and objects per `new`, " \
     "which count the keyword Hash a call passes; C: the library's own initialize, which no C accelerator replaces)\n\n"
puts table(struct_new)
save("struct_new", struct_new)

json_primitives = { "json" => run_rounds("primitives.rb", "json", key: "ns_per_call") }
puts "\nJsonProtocol primitives over a MemoryBufferTransport, each in a list of them (ns/call and objects/call; the C " \
     "columns: the pure-Ruby protocol's methods, which no C accelerator covers, over its MemoryBufferTransport)\n\n"
puts table(json_primitives)
save("json_primitives", json_primitives)

json = { "json" => run_rounds("structs.rb", "json", key: "seconds") }
puts "\nStruct read/write through Thrift::JsonProtocol over a MemoryBufferTransport, which no C accelerator covers (the " \
     "C column: the C accelerator's struct code calling the pure-Ruby protocol's methods; a smaller large struct " \
     "than above)\n\n"
puts struct_table(json, versus: %w[pure])
save("json_structs", json)

stacks = PROTOCOLS.to_h { |protocol| [protocol, run_rounds("stacks.rb", protocol, key: "seconds")] }
puts "\nStruct read/write through transport stacks, one message (write + flush) per struct: a MemoryBufferTransport, " \
     "a FramedTransport over one, a BufferedTransport over an IOStreamTransport of StringIOs\n\n"
puts struct_table(stacks)
save("stacks", stacks)

unless MASTER_IMPLS.empty?
  header = PROTOCOLS.to_h { |protocol| [protocol, run_rounds("stacks.rb", protocol, "header", key: "seconds", impls: MASTER_IMPLS)] }
  puts "\nThe same through HeaderProtocol over a HeaderTransport over a MemoryBufferTransport (thrift master's library " \
       "under all three; 'protocol' is the sub-protocol; header-zlib: with the ZLIB transform)\n\n"
  puts struct_table(header, MASTER_IMPLS)
  save("header_stacks", header)
end

rpc = run_rounds("rpc.rb", key: "calls_per_second", higher: true, impls: RPC_IMPLS + ["floor"], cpu: RPC_CPU)
puts "\nRPC: the generated client calling a Thrift::SimpleServer (forked, the same accelerator) over loopback TCP " \
     "and a UNIX socket#{RPC_CPU ? ", both on CPU #{RPC_CPU}" : ""}; calls per second (higher is better; the best of 3 " \
     "rounds that take the accelerators in turn; 'vs C': thrift_native / C with the same library; floor: a plain " \
     "Ruby client and server exchanging frames of the same sizes with IO#write and IO#read, 'vs floor': the floor's " \
     "calls per second / thrift_native's, how many times the floor's time a call takes) and objects the client " \
     "allocates per call\n\n"
puts rpc_table(rpc)
save("rpc", rpc)

# On a YJIT Ruby: thrift_native +YJIT against C +YJIT and pure Ruby +YJIT on every row of the tables above (their
# ratios, each > 1 where ours is ahead), so that a row where YJIT closes the gap shows.
if YJIT
  measured = [["primitives", primitives, "ns_per_call"], ["structs", structs, "seconds"],
              ["json_primitives", json_primitives, "ns_per_call"], ["json_structs", json, "seconds"],
              ["stacks", stacks, "seconds"], ["header_stacks", header || {}, "seconds"],
              ["rpc", { "" => rpc }, "calls_per_second"]]
  ratios = measured.flat_map do |name, results, key|
    results.flat_map do |protocol, by_op|
      by_op.flat_map do |op, by_impl|
        ours = %w[ours+yjit ours-master+yjit].find { |i| by_impl[i] }
        next [] unless ours

        %w[c-master+yjit c+yjit pure+yjit pure-master+yjit].filter_map do |base|
          next unless by_impl[base]

          higher = key == "calls_per_second"
          r = higher ? by_impl[ours][key] / by_impl[base][key] : by_impl[base][key] / by_impl[ours][key]
          [r, "#{name} #{protocol} #{op}".squeeze(" "), LABELS[base]]
        end
      end
    end
  end
  behind = ratios.select { |r, *| r <= 1 }
  closest = ratios.min_by(3, &:first).map { |r, row, base| format("%s vs %s %.2fx", row, base, r) }
  puts "\nWith YJIT: thrift_native +YJIT ahead on #{ratios.size - behind.size} of #{ratios.size} comparisons with " \
       "C +YJIT and pure Ruby +YJIT; the closest: #{closest.join("; ")}"
  behind.each { |r, row, base| puts format("  behind: %s vs %s %.2fx", row, base, r) }
end
