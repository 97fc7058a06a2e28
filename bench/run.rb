# frozen_string_literal: true

# Side by side: pure-Ruby Thrift, the installed C accelerator and thrift_native, in one run.
# Each accelerator runs in its own child process (only one thrift_native can be loaded at a time); results are
# printed as a table and saved as JSON under bench/results/.
#   ruby bench/run.rb [seconds_per_measurement]
# With THRIFT_MASTER_RB=<apache/thrift checkout>/lib/rb (its ext/ built by you), a column for that newer C
# accelerator is added: Debian's thrift 0.14 has no UUID methods to compare read_uuid with.

require "json"
require "time"
require_relative "../spec/support/child_ruby"

SECONDS = ARGV.fetch(0, "0.5")
IMPLS = (ENV["THRIFT_MASTER_RB"] ? %w[pure c c-master ours] : %w[pure c ours]).freeze
LABELS = { "pure" => "pure Ruby", "c" => "C 0.14", "c-master" => "C master", "ours" => "thrift_native" }.freeze
RESULTS_DIR = File.expand_path("results", __dir__)

PROTOCOLS = %w[binary compact].freeze

def run_suite(script, *args)
  results = Hash.new { |h, k| h[k] = {} }
  IMPLS.each do |impl|
    $stderr.print "#{script} #{args.join(" ")} [#{LABELS[impl]}] "
    ChildRuby.each_line(File.expand_path(script, __dir__), impl, SECONDS, *args) do |line|
      row = JSON.parse(line)
      results[row.fetch("op")][impl] = row
      $stderr.print "."
    end
    $stderr.puts
  end
  results
end

def fmt_ns(row) = row ? format("%.1f", row["ns_per_call"]) : "n/a"
def fmt_obj(row) = row ? format("%.3f", row["objects_per_call"]) : "n/a"

# results: { protocol => { op => { impl => row } } }
def table(results)
  header = ["protocol", "op", *IMPLS.map { |i| "#{LABELS[i]} ns" }, "vs C", *IMPLS.map { |i| "#{LABELS[i]} obj" }]
  rows = results.flat_map do |protocol, by_op|
    by_op.map do |op, by_impl|
      c, ours = by_impl["c-master"] || by_impl["c"], by_impl["ours"]
      speedup = c && ours ? format("%.2fx", c["ns_per_call"] / ours["ns_per_call"]) : "n/a"
      [protocol, op, *IMPLS.map { |i| fmt_ns(by_impl[i]) }, speedup, *IMPLS.map { |i| fmt_obj(by_impl[i]) }]
    end
  end
  render(header, rows)
end

# results: { protocol => { op => { impl => row } } }
def struct_table(results)
  header = ["protocol", "scenario", *IMPLS.map { |i| "#{LABELS[i]} s" }, "vs C", *IMPLS.map { |i| "#{LABELS[i]} obj/op" }]
  rows = results.flat_map do |protocol, by_op|
    by_op.map do |op, by_impl|
      c, ours = by_impl["c-master"] || by_impl["c"], by_impl["ours"]
      any = by_impl.values.first
      label = "#{op} (#{any["count"]}x, #{any["bytes"]} B)"
      speedup = c && ours ? format("%.2fx", c["seconds"] / ours["seconds"]) : "n/a"
      [protocol, label, *IMPLS.map { |i| by_impl[i] ? format("%.4f", by_impl[i]["seconds"]) : "n/a" }, speedup,
       *IMPLS.map { |i| by_impl[i] ? format("%.2f", by_impl[i]["objects_per_op"]) : "n/a" }]
    end
  end
  render(header, rows)
end

# `left`: how many leading columns are labels (left-aligned).
def render(header, rows, left = 2)
  widths = header.each_index.map { |i| ([header] + rows).map { |r| r[i].size }.max }
  line = ->(r) { "| " + r.each_with_index.map { |c, i| i < left ? c.ljust(widths[i]) : c.rjust(widths[i]) }.join(" | ") + " |" }
  [line.call(header), "|" + widths.map { |w| "-" * (w + 2) }.join("|") + "|", *rows.map(&line)].join("\n")
end

def save(name, results)
  Dir.mkdir(RESULTS_DIR) unless Dir.exist?(RESULTS_DIR)
  path = File.join(RESULTS_DIR, "#{name}.json")
  File.write(path, JSON.pretty_generate(
    recorded_at: Time.now.utc.iso8601, ruby: RUBY_DESCRIPTION, seconds_per_measurement: SECONDS.to_f, results: results
  ))
  puts "\nsaved #{path}"
end

primitives = PROTOCOLS.to_h { |protocol| [protocol, run_suite("primitives.rb", protocol)] }
puts "\nBinary and compact protocol primitives over a MemoryBufferTransport (ns/call and objects/call; " \
     "'vs C' = C time / thrift_native time, the newest C measured; n/a: thrift 0.14 has no UUID support)\n\n"
puts table(primitives)
save("primitives", primitives)

structs = PROTOCOLS.to_h { |protocol| [protocol, run_suite("structs.rb", protocol)] }
puts "\nStruct read/write over a MemoryBufferTransport (total seconds for the count, objects per " \
     "read or write; a read's objects include the 2 that `Small.new` itself makes and the objects the result holds)\n\n"
puts struct_table(structs)
save("structs", structs)
