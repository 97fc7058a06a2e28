# frozen_string_literal: true

# What the gzip benchmarks (gzip_writer.rb, gzip_reader.rb) share: the process's RssAnon and a Markdown table.

def rss_anon_kb
  File.read("/proc/self/status")[/^RssAnon:\s+(\d+)/, 1].to_i
end

# Prints a Markdown table under a "###" title, right-aligned, and flushes (the benchmarks print as they go).
def table(title, header, rows)
  widths = header.each_index.map { |i| ([header[i]] + rows.map { |r| r[i] }).map { |c| c.to_s.size }.max }
  line = ->(cells) { "| " + cells.each_with_index.map { |c, i| c.to_s.rjust(widths[i]) }.join(" | ") + " |" }
  puts "", "### #{title}", "", line.(header), "|" + widths.map { |w| "-" * (w + 2) }.join("|") + "|"
  rows.each { |r| puts line.(r) }
  $stdout.flush
end
