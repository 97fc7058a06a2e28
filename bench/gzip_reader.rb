# frozen_string_literal: true

# Zlib::GzipReader vs ThriftNative::GzipReader, in one run.
#
#   ruby bench/gzip_reader.rb              # the pipe recipe, then read-all and each_line
#   NR=2048 MB=20 ruby bench/gzip_reader.rb  # shorter
#   BENCH_QUICK=1 ruby bench/gzip_reader.rb  # bin/bench's: the pipe recipe alone, NR=2048
#
# 1. The pipe recipe (issue 23, after ruby/zlib's 2018 measurement of both sides of a pipe): a forked writer sends
#    NR x 32 KiB of pattern data, gzipped, through IO.pipe; the reader, a fresh child Ruby per class, calls
#    `readpartial(16384, buf)` with its own buffer until EOF. Reported: seconds, objects allocated per readpartial,
#    RssAnon growth over the run, bytes received, and whether a shorter checksummed run gave the same bytes.
# 2. `read` of a whole gzipped file of MB megabytes (log-like lines) from a File: seconds, objects.
# 3. `each_line` over the same file: seconds, objects per line.
#
# Prints tables as it goes and writes everything to bench/results/gzip_reader.json (or $BENCH_RESULTS/).

$LOAD_PATH.unshift File.expand_path("../lib", __dir__)
require "thrift_native"
require "zlib"
require "json"
require "tmpdir"
require "fileutils"
require_relative "gzip_support"
require "rbconfig"
require "open3"

CHUNK = 32 * 1024
QUICK = ENV["BENCH_QUICK"] == "1"
NR = Integer(ENV.fetch("NR", QUICK ? 2048 : 16_384))
MB = Integer(ENV.fetch("MB", 100))
READERS = [Zlib::GzipReader, ThriftNative::GzipReader].freeze
PATTERN = ((0..255).map(&:chr).join * 128).freeze
RESULTS = { "ruby" => RUBY_DESCRIPTION, "zlib" => Zlib.zlib_version, "started_at" => Time.now.utc.to_s }

def cpu_seconds
  Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID)
end

# A gzip file of `nr` x 32 KiB of the pattern (written once, by our writer: the writer is not what is measured).
def pattern_file(dir, nr)
  path = File.join(dir, "pattern-#{nr}.gz")
  ThriftNative::GzipWriter.open(path) { |gz| nr.times { gz.write(PATTERN) } } unless File.exist?(path)
  path
end

# The child's side of the recipe (`--pipe CLASS FILE CHECK`): forks a writer that copies the gzip file into a pipe,
# reads it with `readpartial(16384, buf)` and reports its figures as JSON on stdout.
def pipe_child(klass_name, path, check)
  klass = Object.const_get(klass_name)
  r, w = IO.pipe
  writer = fork do
    r.close
    IO.copy_stream(path, w)
    w.close
    exit!(0)
  end
  w.close
  buf = String.new(capacity: 16_384)
  crc = 0
  GC.start
  rss_before = rss_anon_kb
  objects_before = GC.stat(:total_allocated_objects)
  wall = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  cpu = cpu_seconds
  gz = klass.new(r)
  bytes = calls = 0
  begin
    loop do
      gz.readpartial(16_384, buf)
      calls += 1
      bytes += buf.bytesize
      crc = Zlib.crc32(buf, crc) if check
    end
  rescue EOFError
    nil
  end
  wall = Process.clock_gettime(Process::CLOCK_MONOTONIC) - wall
  cpu = cpu_seconds - cpu
  objects = GC.stat(:total_allocated_objects) - objects_before
  rss_growth = rss_anon_kb - rss_before
  gz.close
  Process.wait(writer)
  puts JSON.generate("seconds" => wall, "cpu_seconds" => cpu, "calls" => calls, "bytes" => bytes, "crc" => crc,
                     "objects" => objects, "rss_anon_growth_kb" => rss_growth)
end

# A child run of the recipe; one that Zlib failed spuriously is run again (gzip_support.rb). Its figures, with
# "zlib_buf_errors_retried".
def run_child(*args)
  result, spurious = retrying_zlib_buf_error("pipe: #{args[1]}") do
    out, err, status = Open3.capture3(RbConfig.ruby, __FILE__, *args)
    raise "child #{args.inspect} failed: #{err.lines.last(5).join}" unless status.success?

    JSON.parse(out)
  end
  result.merge("zlib_buf_errors_retried" => spurious)
end

def pipe_recipe(dir)
  path = pattern_file(dir, NR)
  check_path = pattern_file(dir, [NR / 16, 16].max)
  expected_bytes = NR * CHUNK
  rows = READERS.map do |klass|
    # Alternate rounds; keep each class's best.
    runs = Array.new(2) { run_child("--pipe", klass.name, path, "false") }
    best = runs.min_by { |r| r["seconds"] }
    check = run_child("--pipe", klass.name, check_path, "true")
    [klass, best, check, (runs + [check]).sum { |r| r["zlib_buf_errors_retried"] }]
  end
  crcs = rows.map { |_, _, check| check["crc"] }.uniq
  zlib_seconds = rows[0][1]["seconds"]
  retried = rows.sum(&:last)
  table("Pipe recipe: #{NR} x 32 KiB of pattern data, readpartial(16384, buf) until EOF" \
        "#{retried.positive? ? " (#{retried} run(s) retried after a spurious Zlib::BufError)" : ""}",
        ["reader", "seconds", "vs Zlib", "objects / readpartial", "RssAnon growth", "bytes", "same bytes"],
        rows.map do |klass, best, _|
          [klass.name, format("%.3f", best["seconds"]), format("%.2fx", zlib_seconds / best["seconds"]),
           format("%.3f", best["objects"].fdiv(best["calls"])), "#{(best["rss_anon_growth_kb"] / 1024.0).round(1)} MiB",
           best["bytes"] == expected_bytes ? best["bytes"] : "#{best["bytes"]} (expected #{expected_bytes})",
           crcs.size == 1 ? "yes" : "NO"]
        end)
  RESULTS["pipe_recipe"] = rows.to_h do |klass, best, check, retries|
    [klass.name, best.merge("check_crc" => check["crc"], "zlib_buf_errors_retried" => retries)]
  end
  crcs.size == 1 && rows.all? { |_, best, *| best["bytes"] == expected_bytes }
end

# Log-like lines: short, of varying length, MB megabytes in all.
def log_file(dir)
  path = File.join(dir, "log-#{MB}.gz")
  return path if File.exist?(path)

  rng = Random.new(42)
  levels = %w[INFO WARN DEBUG ERROR]
  ThriftNative::GzipWriter.open(path) do |gz|
    written = 0
    while written < MB * 1024 * 1024
      lines = Array.new(1000) do |i|
        "2026-12-05T11:#{format("%02d", i % 60)}:00Z #{levels[i % 4]} request id=#{rng.rand(1 << 30)} " \
          "took=#{rng.rand(1000)}ms path=/api/v#{i % 3}/items/#{rng.rand(100_000)}\n"
      end.join
      gz.write(lines)
      written += lines.bytesize
    end
  end
  path
end

def measure
  GC.start
  objects = GC.stat(:total_allocated_objects)
  t = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  result = yield
  [Process.clock_gettime(Process::CLOCK_MONOTONIC) - t, GC.stat(:total_allocated_objects) - objects, result]
end

def file_reads(dir)
  path = log_file(dir)
  reads = READERS.map do |klass|
    best = Array.new(2) do
      retrying_zlib_buf_error("read: #{klass}") { measure { File.open(path, "rb") { |f| klass.new(f).read.bytesize } } }.first
    end.min_by(&:first)
    [klass, *best]
  end
  lines = READERS.map do |klass|
    best = Array.new(2) do
      retrying_zlib_buf_error("each_line: #{klass}") do
        measure do
          n = 0
          File.open(path, "rb") { |f| klass.new(f).each_line { n += 1 } }
          n
        end
      end.first
    end.min_by(&:first)
    [klass, *best]
  end
  table("read of a whole #{MB} MB file (#{File.size(path) / 1024} KiB gzipped)",
        ["reader", "seconds", "vs Zlib", "objects", "bytes"],
        reads.map { |k, s, o, n| [k.name, format("%.3f", s), format("%.2fx", reads[0][1] / s), o, n] })
  table("each_line over the same file", ["reader", "seconds", "vs Zlib", "objects / line", "lines"],
        lines.map { |k, s, o, n| [k.name, format("%.3f", s), format("%.2fx", lines[0][1] / s), format("%.3f", o.fdiv(n)), n] })
  RESULTS["read_all"] = reads.to_h { |k, s, o, n| [k.name, { "seconds" => s, "objects" => o, "bytes" => n }] }
  RESULTS["each_line"] = lines.to_h { |k, s, o, n| [k.name, { "seconds" => s, "objects" => o, "lines" => n }] }
end

if ARGV[0] == "--pipe"
  pipe_child(ARGV[1], ARGV[2], ARGV[3] == "true")
  exit
end

all_bytes = Dir.mktmpdir("gzip_reader_bench") do |dir|
  pipe_recipe(dir).tap { file_reads(dir) unless QUICK }
end
out_dir = ENV.fetch("BENCH_RESULTS", File.expand_path("results", __dir__))
FileUtils.mkdir_p(out_dir)
File.write(File.join(out_dir, "gzip_reader.json"), JSON.pretty_generate(RESULTS) + "\n")
abort "bench/gzip_reader.rb: a reader's bytes differ from what was written" unless all_bytes
