# frozen_string_literal: true

# The README's headline comparison, drawn from the JSON that bench/run.rb saves: a few struct rows (structs.json,
# stacks.json, json_structs.json) as an SVG bar chart of the time per operation of pure Ruby, the C accelerator and
# thrift_native, each row scaled to pure Ruby's time (linear; every bar labelled with its time and speed-up), and the
# same rows as a Markdown table on stdout, then the HTTP calls of http.json (calls per second) as a second table. Standard library only (json), so any Ruby of the matrix runs it.
#
#   ruby bench/chart.rb [RESULTS_DIR] [OUT]     default: BENCH_RESULTS or bench/results, and RESULTS_DIR/headline.svg
#
# The C accelerator is the newest one measured: thrift master's ("c-master") where the run had it beside the loaded
# thrift's, else the loaded thrift's ("c"), named after the results folder (ruby-RUBY-thrift-THRIFT/), or
# THRIFT_C_VERSION as bench/run.rb names it (default 0.14, Debian 12's). A row the run lacks, or whose pure-Ruby
# measurement is missing (thrift before 0.20 cannot write structs on Ruby 3.2+), is left out; with none left it
# says so and draws nothing.

require "json"

RESULTS_DIR = File.expand_path(ARGV.fetch(0, ENV.fetch("BENCH_RESULTS", File.join(__dir__, "results"))))
OUT = File.expand_path(ARGV.fetch(1, File.join(RESULTS_DIR, "headline.svg")))

# [results file, protocol, op, label]
ROWS = [
  ["structs", "binary", "small_read", "binary read, small struct"],
  ["structs", "binary", "small_write", "binary write, small struct"],
  ["structs", "compact", "small_read", "compact read, small struct"],
  ["structs", "compact", "small_write", "compact write, small struct"],
  ["structs", "binary", "large_read", "binary read, large struct"],
  ["structs", "binary", "large_write", "binary write, large struct"],
  ["structs", "plain", "small_read", "BinaryProtocol read, small struct"],
  ["structs", "plain", "small_write", "BinaryProtocol write, small struct"],
  ["structs", "plain", "large_read", "BinaryProtocol read, large struct"],
  ["structs", "plain", "large_write", "BinaryProtocol write, large struct"],
  ["stacks", "binary", "framed small_read", "framed binary read, small"],
  ["stacks", "binary", "framed small_write", "framed binary write, small"],
  ["json_structs", "json", "small_read", "JsonProtocol read, small *"],
  ["json_structs", "json", "small_write", "JsonProtocol write, small *"]
].freeze

def load_results(name)
  path = File.join(RESULTS_DIR, "#{name}.json")
  File.exist?(path) ? JSON.parse(File.read(path)) : nil
end

files = ROWS.map(&:first).uniq.to_h { |name| [name, load_results(name)] }
abort "bench/chart.rb: no structs.json in #{RESULTS_DIR} (run bench/run.rb first)" unless files["structs"]

ROOT = File.expand_path("..", __dir__)
c_impl = files["structs"]["results"].values.first.values.first.key?("c-master") ? "c-master" : "c"
library = RESULTS_DIR[/thrift-([^\/]+)\z/, 1] || ENV.fetch("THRIFT_C_VERSION", "0.14")
c_version = c_impl == "c-master" ? "master" : library
SERIES = [["pure", "pure Ruby", "#9e9e9e"], [c_impl, "C accelerator (thrift #{c_version})", "#e0893a"],
          ["ours", "thrift_native", "#2f6fb0"]].freeze

# [label, { impl => seconds per operation }, bytes]
rows = ROWS.filter_map do |file, protocol, op, label|
  by_impl = files[file]&.dig("results", protocol, op)
  next unless by_impl && SERIES.all? { |impl, *| by_impl[impl] }

  per_op = SERIES.to_h { |impl, *| [impl, by_impl[impl]["seconds"] / by_impl[impl]["count"]] }
  [label, per_op, by_impl["ours"]["bytes"]]
end
if rows.empty?
  warn "bench/chart.rb: none of the headline rows (with pure Ruby's beside) is in #{RESULTS_DIR}: no chart"
  exit
end

def duration(seconds)
  micro = seconds * 1e6
  return format("%.2f µs", micro) if micro < 10
  return format("%.1f µs", micro) if micro < 1000

  format("%.1f ms", micro / 1000)
end

def bytes(n) = n ? "#{n.to_s.reverse.scan(/\d{1,3}/).join(",").reverse} B" : "?"

def ratio(base, mine) = format("%.1fx", base / mine)

def esc(text) = text.to_s.gsub("&", "&amp;").gsub("<", "&lt;").gsub(">", "&gt;").gsub('"', "&quot;")

meta = files["structs"]
# bin/bench's quick run saves into headline/ (bench/quick.rb); the full one (bench/run.rb) beside it.
run_name = File.basename(RESULTS_DIR) == "headline" ? "bin/bench (bench/quick.rb)" : "bin/bench --full (bench/run.rb, #{meta["seconds_per_measurement"]} s a measurement)"
ruby = meta["ruby"][/\Aruby \S+/] || meta["ruby"]
recorded = meta["recorded_at"].to_s[0, 10]
source = RESULTS_DIR.delete_prefix("#{ROOT}/")
sizes = meta["results"]["binary"].values_at("small_read", "large_read").map do |by_impl|
  by_impl&.values&.first&.fetch("bytes")
end

# Layout: a label column, then bars scaled to pure Ruby's time (the longest), each labelled at its end.
LABEL_W = 230
BAR_X = LABEL_W + 10
BAR_MAX = 420
BAR_H = 14
BAR_GAP = 3
GROUP_GAP = 14
TOP = 96
WIDTH = BAR_X + BAR_MAX + 250
group_h = SERIES.size * (BAR_H + BAR_GAP) - BAR_GAP
height = TOP + rows.size * (group_h + GROUP_GAP) + 62

svg = []
svg << %(<?xml version="1.0" encoding="UTF-8"?>)
svg << %(<svg xmlns="http://www.w3.org/2000/svg" width="#{WIDTH}" height="#{height}" ) +
       %(viewBox="0 0 #{WIDTH} #{height}" font-family="Helvetica, Arial, sans-serif" font-size="12">)
svg << %(<rect width="#{WIDTH}" height="#{height}" fill="#ffffff"/>)
svg << %(<text x="12" y="24" font-size="16" font-weight="bold">) +
       esc("Struct read and write: time per operation, scaled to pure Ruby's (shorter is faster)") + %(</text>)
svg << %(<text x="12" y="42" fill="#555555">) +
       esc("#{ruby}; #{run_name} of #{recorded}; data: #{source}/") + %(</text>)
svg << %(<text x="12" y="58" fill="#555555">) +
       esc("pure Ruby and thrift_native on thrift #{library}'s library, the C accelerator with thrift " \
           "#{c_version}'s") + %(</text>)
SERIES.each_with_index do |(_, name, color), i|
  x = 12 + i * 250
  svg << %(<rect x="#{x}" y="68" width="12" height="12" fill="#{color}"/>)
  svg << %(<text x="#{x + 18}" y="78">#{esc(name)}</text>)
end

rows.each_with_index do |(label, per_op, _bytes), r|
  y0 = TOP + r * (group_h + GROUP_GAP)
  svg << %(<text x="#{LABEL_W}" y="#{y0 + group_h / 2 + 4}" text-anchor="end">#{esc(label)}</text>)
  pure = per_op["pure"]
  SERIES.each_with_index do |(impl, _, color), i|
    y = y0 + i * (BAR_H + BAR_GAP)
    w = [(per_op[impl] / pure * BAR_MAX).round(1), 2].max
    text = duration(per_op[impl])
    text += " (#{ratio(pure, per_op[impl])} pure Ruby)" unless impl == "pure"
    text += ", #{ratio(per_op[c_impl], per_op[impl])} C" if impl == "ours"
    svg << %(<rect x="#{BAR_X}" y="#{y}" width="#{w}" height="#{BAR_H}" fill="#{color}"/>)
    svg << %(<text x="#{BAR_X + w + 6}" y="#{y + BAR_H - 3}" font-size="11">#{esc(text)}</text>)
  end
end

foot = TOP + rows.size * (group_h + GROUP_GAP) + 8
svg << %(<line x1="#{BAR_X}" y1="#{TOP - 6}" x2="#{BAR_X}" y2="#{foot - 10}" stroke="#333333"/>)
svg << %(<text x="12" y="#{foot + 8}" font-size="11" fill="#555555">) +
       esc("Binary sizes: small #{bytes(sizes[0])}, large #{bytes(sizes[1])}. Over a MemoryBufferTransport; " \
           "framed: a FramedTransport over one, write + flush per struct.") + %(</text>)
svg << %(<text x="12" y="#{foot + 24}" font-size="11" fill="#555555">) +
       esc("* No C accelerator covers JsonProtocol: its C bars are the C accelerator's struct code calling the " \
           "pure-Ruby protocol's methods.") + %(</text>)
svg << %(<text x="12" y="#{foot + 40}" font-size="11" fill="#555555">) +
       esc("Every table of the run: bench/README.md.") + %(</text>)
svg << "</svg>"
File.write(OUT, svg.join("\n") + "\n")

# The same rows as Markdown, for the README.
puts "| scenario | #{SERIES.map { |_, name, _| name }.join(" | ")} | vs C | vs pure Ruby |"
puts "|---|#{"---|" * (SERIES.size + 2)}"
rows.each do |label, per_op, _|
  cells = SERIES.map { |impl, *| duration(per_op[impl]) }
  versus = [ratio(per_op[c_impl], per_op["ours"]), ratio(per_op["pure"], per_op["ours"])]
  puts "| #{label} | #{(cells + versus).join(" | ")} |"
end

# The HTTP calls (bench/http.rb), where the run has them: calls per second, a table of their own.
http = load_results("http")
if http
  puts "\n| HTTP call | pure Ruby | C accelerator | thrift_native | vs C | vs pure Ruby |"
  puts "|---|---|---|---|---|---|"
  http["results"].each do |op, by_impl|
    pure, c, ours = [/\Apure/, /\Ac/, /\Aours/].map { |p| by_impl.find { |i, _| i.match?(p) && !i.end_with?("+yjit") }&.last }
    next unless pure && c && ours

    rate = ->(row) { format("%.1f calls/s", row["calls_per_second"]) }
    versus = [c, pure].map { |base| format("%.1fx", ours["calls_per_second"] / base["calls_per_second"]) }
    puts "| #{op} | #{[pure, c, ours].map(&rate).join(" | ")} | #{versus.join(" | ")} |"
  end
end
$stderr.puts "bench/chart.rb: wrote #{OUT}"
