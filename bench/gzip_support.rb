# frozen_string_literal: true

# What the gzip benchmarks (gzip_writer.rb, gzip_reader.rb) share: the process's RssAnon, a Markdown table, and
# the retry of a run that Zlib failed spuriously.

# Zlib's GzipReader and GzipWriter now and then raise Zlib::BufError ("buffer error") on valid data: ruby/zlib#49 and
# #57 (an inflate or deflate run without the GVL and interrupted, by a signal or a thread's wake-up, reported as a
# buffer error; seen here as GzipReader#readpartial on a pipe with Ruby 3.1's zlib). Where Zlib is what is measured,
# the run is retried, at most RETRIES times, and the table says so; where it is not (the writer benchmark's reader),
# ThriftNative::GzipReader reads instead.
ZLIB_RETRIES = 3

# Runs the block (one measurement run, which raises with the failure's text) until it does not fail with
# Zlib::BufError, ZLIB_RETRIES times at most; answers [its result, how many runs Zlib failed spuriously].
def retrying_zlib_buf_error(what)
  failed = 0
  begin
    [yield, failed]
  rescue StandardError => e
    raise unless e.message.include?("Zlib::BufError") || e.is_a?(Zlib::BufError)

    failed += 1
    raise if failed > ZLIB_RETRIES

    warn "#{what}: Zlib::BufError (ruby/zlib#49), run again (#{failed} of at most #{ZLIB_RETRIES})"
    retry
  end
end

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
