# frozen_string_literal: true

# Zlib::GzipWriter vs ThriftNative::GzipWriter, in one run.
#
#   ruby bench/gzip_writer.rb            # pipe recipe (pattern + random), throughput per level, nogvl threshold
#   NR=8192 NR_RANDOM=1024 ruby bench/gzip_writer.rb   # shorter
#   BENCH_QUICK=1 ruby bench/gzip_writer.rb            # bin/bench's: the pipe recipe alone, NR=2048 NR_RANDOM=256
#
# 1. The pipe recipe of ruby/zlib commit 10d0e90 (its benchmark of Zlib::GzipWriter's garbage): a child Ruby writes NR
#    32 KiB Strings through the writer into IO.pipe and reports user seconds, RssAnon, objects allocated per write and
#    GC runs; the parent reads with Zlib::GzipReader#readpartial and checks it received NR * 32768 bytes.
# 2. Throughput (MB/s of input) per level on a corpus of serialized Thrift structs written one struct per `write`.
# 3. The deflate engines alone (raw system zlib, both writers to a null sink), level 6: the ceiling on this CPU.
# 4. The cost of releasing the GVL, per input size, which sets GzipWriter.nogvl_threshold.
#
# Prints tables as it goes and writes everything to bench/results/gzip_writer.json (or $BENCH_RESULTS/).

$LOAD_PATH.unshift File.expand_path("../lib", __dir__)
require "thrift_native"
require "zlib"
require "json"
require "benchmark"
require "fileutils"
require_relative "gzip_support"

CHUNK = 32 * 1024
QUICK = ENV["BENCH_QUICK"] == "1"
NR = Integer(ENV.fetch("NR", QUICK ? 2048 : 16_384 * 2))
NR_RANDOM = Integer(ENV.fetch("NR_RANDOM", QUICK ? 256 : 4096))
WRITERS = [Zlib::GzipWriter, ThriftNative::GzipWriter].freeze
RESULTS = { "ruby" => RUBY_DESCRIPTION, "zlib" => Zlib.zlib_version, "started_at" => Time.now.utc.to_s }

PATTERN = ((0..255).map(&:chr).join * 128).freeze
RANDOM_BANK = Array.new(16) { Random.new(_1).bytes(CHUNK).freeze }.freeze

def progress(msg)
  $stderr.print(msg)
  $stderr.flush
end

# The writer side of the recipe runs in a fresh child Ruby (`--writer CLASS DATA NR`) that writes the gzip stream to
# its stdout (a pipe) and its stats as JSON to stderr; `--bare` loads and prepares the same, writes nothing, and
# reports its RssAnon: the baseline of a bare Ruby process with these libraries.
def child_main(args)
  mode = args.shift
  if mode == "--bare"
    GC.start
    warn JSON.generate("rss_anon_kb" => rss_anon_kb)
    return
  end
  klass = Object.const_get(args[0])
  data = args[1].to_sym
  nr = Integer(args[2])
  # The write end of a pipe, as IO.pipe gives it in the original recipe ($stdout itself is special: SIGPIPE on EPIPE).
  out = IO.for_fd(1, "wb", autoclose: false)
  GC.start
  gz = klass.new(out)
  gc_before = GC.count
  objs_before = GC.stat(:total_allocated_objects)
  tms = Benchmark.measure do
    i = 0
    if data == :pattern
      while i < nr
        gz.write(PATTERN)
        i += 1
      end
    else
      while i < nr
        gz.write(RANDOM_BANK[i & 15])
        i += 1
      end
    end
    gz.close
  end
  objs = GC.stat(:total_allocated_objects) - objs_before
  warn JSON.generate("user" => tms.utime, "sys" => tms.stime, "real" => tms.real, "rss_anon_kb" => rss_anon_kb,
                     "objects" => objs, "objects_per_write" => objs.fdiv(nr), "gc_runs" => GC.count - gc_before)
end

def child_command(*args)
  [RbConfig.ruby, __FILE__, *args]
end

def pipe_run(klass, data, nr)
  stats_rd, stats_wr = IO.pipe
  received = 0
  reader_tms = nil
  IO.popen(child_command("--writer", klass.name, data.to_s, nr.to_s), "rb", err: stats_wr) do |rd|
    stats_wr.close
    reader_tms = Benchmark.measure do
      # Not Zlib::GzipReader, which can raise Zlib::BufError spuriously (gzip_support.rb): the reader is not what
      # is measured here, only what receives and checks the stream.
      gzr = ThriftNative::GzipReader.new(rd)
      buf = "".b
      loop do
        gzr.readpartial(16_384, buf)
        received += buf.bytesize
      rescue EOFError
        break
      end
    end
  end
  ok = $?.success?
  stats_text = stats_rd.read
  raise "the #{klass} writer child failed: #{stats_text.lines.last(5).join}" unless ok

  stats = JSON.parse(stats_text.lines.last)
  stats.merge("received" => received, "expected" => nr * CHUNK, "reader_user" => reader_tms.utime,
              "ok" => ok && received == nr * CHUNK)
ensure
  stats_rd&.close
end

def bare_child_rss
  stats_rd, stats_wr = IO.pipe
  system(*child_command("--bare"), err: stats_wr)
  stats_wr.close
  JSON.parse(stats_rd.read.lines.last)["rss_anon_kb"]
ensure
  stats_rd&.close
end

def bare_ruby_rss
  IO.popen([RbConfig.ruby, "-rzlib", "-e", 'puts File.read("/proc/self/status")[/^RssAnon:\s+(\d+)/, 1]'], &:read).to_i
end

if ARGV.first&.start_with?("--")
  child_main(ARGV.dup)
  exit
end

# ---------------------------------------------------------------------------------------------------------------
# 1. Pipe recipe.

bare_fork = bare_child_rss
bare_ruby = bare_ruby_rss
RESULTS["baseline_rss_anon_kb"] = { "bare_child" => bare_fork, "ruby_rzlib" => bare_ruby }
puts "## GzipWriter pipe recipe (#{RUBY_DESCRIPTION})"
puts "", "Baseline RssAnon: bare child (same libraries and buffers, no writing) #{bare_fork} kB; `ruby -rzlib` #{bare_ruby} kB."

pipe_rows = []
RESULTS["pipe"] = []
[[:pattern, NR], [:random, NR_RANDOM]].each do |data, nr|
  runs = WRITERS.map do |klass|
    progress "pipe: #{klass} #{data} x#{nr} ... "
    r, spurious = retrying_zlib_buf_error("pipe: #{klass} #{data}") { pipe_run(klass, data, nr) }
    progress format("%.2fs user\n", r["user"])
    r.merge("writer" => klass.name, "data" => data.to_s, "nr" => nr, "zlib_buf_errors_retried" => spurious)
  end
  RESULTS["pipe"].concat(runs)
  zlib_user = runs[0]["user"]
  runs.each do |r|
    pipe_rows << [r["data"], "#{r["nr"]} x 32 KiB", r["writer"], format("%.3f", r["user"]), format("%.3f", r["sys"]),
                  format("%.2fx", zlib_user / r["user"]), r["rss_anon_kb"], r["rss_anon_kb"] - bare_fork,
                  format("%.4f", r["objects_per_write"]), r["gc_runs"], r["received"], r["ok"] ? "yes" : "NO"]
  end
end
retried = RESULTS["pipe"].sum { |r| r["zlib_buf_errors_retried"] }
table("Pipe recipe: writer in a child Ruby writing to a pipe, ThriftNative::GzipReader#readpartial in the parent" \
      "#{retried.positive? ? " (#{retried} run(s) retried after a spurious Zlib::BufError)" : ""}",
      ["data", "writes", "writer", "user s", "sys s", "speed-up", "RssAnon kB", "over bare kB", "objects/write",
       "GC runs", "bytes received", "all bytes"], pipe_rows)

def save_results
  results_dir = File.expand_path(ENV.fetch("BENCH_RESULTS", File.join(__dir__, "results")))
  FileUtils.mkdir_p results_dir
  path = File.join(results_dir, "gzip_writer.json")
  File.write(path, JSON.pretty_generate(RESULTS))
  puts "", "Results written to #{path}"
end

if QUICK
  save_results
  exit(RESULTS["pipe"].all? { |r| r["ok"] })
end

# ---------------------------------------------------------------------------------------------------------------
# 2. Throughput per level on serialized Thrift structs.

module BenchThrift
  class Address
    include ::Thrift::Struct
    include ::Thrift::Struct_Union
    STREET = 1
    CITY = 2
    ZIP = 3
    FIELDS = {
      STREET => { type: ::Thrift::Types::STRING, name: "street" },
      CITY => { type: ::Thrift::Types::STRING, name: "city" },
      ZIP => { type: ::Thrift::Types::I32, name: "zip" }
    }.freeze
    def struct_fields = FIELDS
    def validate; end
    ::Thrift::Struct.generate_accessors self
  end

  class Event
    include ::Thrift::Struct
    include ::Thrift::Struct_Union
    FIELDS = {
      1 => { type: ::Thrift::Types::I64, name: "id" },
      2 => { type: ::Thrift::Types::STRING, name: "name" },
      3 => { type: ::Thrift::Types::I64, name: "timestamp" },
      4 => { type: ::Thrift::Types::DOUBLE, name: "score" },
      5 => { type: ::Thrift::Types::BOOL, name: "active" },
      6 => { type: ::Thrift::Types::LIST, name: "tags", element: { type: ::Thrift::Types::STRING } },
      7 => { type: ::Thrift::Types::STRUCT, name: "address", class: Address },
      8 => { type: ::Thrift::Types::MAP, name: "attrs", key: { type: ::Thrift::Types::STRING },
             value: { type: ::Thrift::Types::I32 } },
      9 => { type: ::Thrift::Types::STRING, name: "payload", binary: true }
    }.freeze
    def struct_fields = FIELDS
    def validate; end
    ::Thrift::Struct.generate_accessors self
  end
end

def thrift_corpus(target_bytes)
  rnd = Random.new(42)
  words = %w[alpha beta gamma delta order payment user session click view cart search checkout refund login
             logout mobile web ios android eu us asia premium free trial]
  cities = %w[Paris Berlin Lisbon Osaka Lima Austin Oslo Nairobi]
  serializer = ::Thrift::Serializer.new(::Thrift::BinaryProtocolFactory.new)
  frames = []
  size = 0
  id = 1_000_000
  while size < target_bytes
    id += rnd.rand(1..50)
    ev = BenchThrift::Event.new(
      id: id, name: "#{words.sample(random: rnd)}.#{words.sample(random: rnd)}",
      timestamp: 1_700_000_000_000 + (id * 37), score: rnd.rand.round(4), active: rnd.rand < 0.8,
      tags: words.sample(rnd.rand(0..5), random: rnd),
      address: BenchThrift::Address.new(street: "#{rnd.rand(1..999)} #{words.sample(random: rnd)} street",
                                        city: cities.sample(random: rnd), zip: rnd.rand(10_000..99_999)),
      attrs: words.sample(rnd.rand(0..4), random: rnd).to_h { [_1, rnd.rand(0..1000)] },
      payload: rnd.bytes(rnd.rand(0..48))
    )
    frame = serializer.serialize(ev).b.freeze
    frames << frame
    size += frame.bytesize
  end
  frames
end

class NullIO
  attr_reader :bytes

  def initialize
    @bytes = 0
  end

  def write(str)
    @bytes += str.bytesize
  end
end

progress "building the Thrift corpus ... "
corpus_mib = Float(ENV.fetch("CORPUS_MIB", 8))
frames = thrift_corpus((corpus_mib * 1024 * 1024).to_i)
corpus_bytes = frames.sum(&:bytesize)
progress "#{frames.size} structs, #{corpus_bytes} bytes (avg #{corpus_bytes / frames.size} B)\n"

def throughput(klass, level, frames, bytes)
  best = nil
  out = 0
  2.times do
    io = NullIO.new
    t = Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID)
    gz = klass.new(io, level)
    frames.each { |f| gz.write(f) }
    gz.close
    dt = Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID) - t
    best = dt if best.nil? || dt < best
    out = io.bytes
  end
  { "mb_s" => bytes / best / 1e6, "ratio" => out.fdiv(bytes), "cpu_s" => best }
end

RESULTS["thrift_corpus"] = { "structs" => frames.size, "bytes" => corpus_bytes, "levels" => [] }
level_rows = []
(0..9).each do |level|
  progress "throughput level #{level} ... "
  z, = retrying_zlib_buf_error("throughput: Zlib::GzipWriter") { throughput(Zlib::GzipWriter, level, frames, corpus_bytes) }
  o = throughput(ThriftNative::GzipWriter, level, frames, corpus_bytes)
  progress format("%.0f vs %.0f MB/s\n", z["mb_s"], o["mb_s"])
  RESULTS["thrift_corpus"]["levels"] << { "level" => level, "zlib" => z, "thrift_native" => o }
  level_rows << [level, format("%.1f", z["mb_s"]), format("%.1f", o["mb_s"]), format("%.2fx", o["mb_s"] / z["mb_s"]),
                 format("%.3f", z["ratio"]), format("%.3f", o["ratio"])]
end
table("Throughput: #{frames.size} serialized Thrift structs (#{corpus_bytes / 1024} KiB), one write per struct, " \
      "MB/s of input (CPU time, best of 2)",
      ["level", "Zlib MB/s", "ours MB/s", "speed-up", "Zlib ratio", "ours ratio"], level_rows)

# ---------------------------------------------------------------------------------------------------------------
# 3. The deflate engines alone, in this process: what level 6 costs per byte on this CPU, with no pipe and no GC.
#     Zlib::Deflate is the system zlib that Zlib::GzipWriter runs on; GzipWriter rows add CRC and the gzip framing.

def engine_rate(data, nr)
  chunk = ->(i) { data == :pattern ? PATTERN : RANDOM_BANK[i & 15] }
  writers = {
    "Zlib::Deflate (raw, system zlib #{Zlib.zlib_version})" => lambda {
      z = Zlib::Deflate.new(6, -Zlib::MAX_WBITS)
      nr.times { |i| z.deflate(chunk.(i)) }
      z.finish
    },
    "Zlib::GzipWriter" => lambda {
      gz = Zlib::GzipWriter.new(NullIO.new, 6)
      nr.times { |i| gz.write(chunk.(i)) }
      gz.close
    },
    "ThriftNative::GzipWriter (zlib-rs)" => lambda {
      gz = ThriftNative::GzipWriter.new(NullIO.new, 6)
      nr.times { |i| gz.write(chunk.(i)) }
      gz.close
    }
  }
  writers.transform_values do |run|
    2.times.map do
      t = Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID)
      run.()
      Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID) - t
    end.min.then { |dt| nr * CHUNK / dt / 1e6 }
  end
end

engine_rows = []
RESULTS["engines"] = []
[[:pattern, 8192], [:random, 1024]].each do |data, nr|
  progress "engines: #{data} ... "
  rates, = retrying_zlib_buf_error("engines: #{data}") { engine_rate(data, nr) }
  progress "\n"
  base = rates["Zlib::GzipWriter"]
  rates.each do |name, mb_s|
    RESULTS["engines"] << { "data" => data.to_s, "writes" => nr, "engine" => name, "mb_s" => mb_s }
    engine_rows << [data, "#{nr} x 32 KiB", name, format("%.1f", mb_s), format("%.2fx", mb_s / base)]
  end
end
table("Deflate engines alone, level 6, CPU time (best of 2), to a null sink",
      ["data", "writes", "engine", "MB/s", "vs Zlib::GzipWriter"], engine_rows)

# ---------------------------------------------------------------------------------------------------------------
# 4. Releasing the GVL: wall time per write with and without it, by input size.

def time_writes(size, data, threshold, reps)
  ThriftNative::GzipWriter.nogvl_threshold = threshold
  inputs = Array.new(16) do |i|
    data == :pattern ? (PATTERN * ((size / CHUNK) + 1)).byteslice(0, size) : Random.new(i).bytes(size)
  end
  gz = ThriftNative::GzipWriter.new(NullIO.new)
  gz.write(inputs[0])
  t = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  reps.times { |i| gz.write(inputs[i & 15]) }
  dt = Process.clock_gettime(Process::CLOCK_MONOTONIC) - t
  gz.close
  dt / reps * 1e6
end

default_threshold = ThriftNative::GzipWriter.nogvl_threshold
nogvl_rows = []
RESULTS["nogvl"] = { "threshold" => default_threshold, "sizes" => [] }
progress "nogvl cost "
[4 * 1024, 16 * 1024, 64 * 1024, 256 * 1024, 1024 * 1024].each do |size|
  %i[pattern random].each do |data|
    reps = [(8 * 1024 * 1024) / size, 8].max
    with_gvl = 3.times.map { time_writes(size, data, 1 << 62, reps) }.min
    without = 3.times.map { time_writes(size, data, 0, reps) }.min
    progress "."
    RESULTS["nogvl"]["sizes"] << { "size" => size, "data" => data.to_s, "gvl_us" => with_gvl, "nogvl_us" => without }
    nogvl_rows << [size, data, format("%.1f", with_gvl), format("%.1f", without),
                   format("%+.1f%%", ((without / with_gvl) - 1) * 100)]
  end
end
progress "\n"
ThriftNative::GzipWriter.nogvl_threshold = default_threshold
table("Releasing the GVL: µs per write (level 6, copy + release included); threshold in use: #{default_threshold} B",
      ["input bytes", "data", "GVL held µs", "GVL released µs", "cost"], nogvl_rows)

save_results
exit(RESULTS["pipe"].all? { |r| r["ok"] })
