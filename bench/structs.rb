# frozen_string_literal: true

# One accelerator's struct scenarios, modelled on upstream Thrift's Ruby protocol benchmark: a small struct (one
# field of each scalar type plus two strings, 77 bytes in binary) read and written 20,000 times, and a large one
# (four levels of lists and i32/i64/double/string-keyed maps, about 1.6 MB in binary) read and written a few times.
# Run by bench/run.rb in a child process per accelerator; prints one JSON line per measurement.
#   ruby bench/structs.rb pure|c|c-master|ours [seconds, unused] [binary|compact|json]
# BENCH_QUICK=1: 4,000 small and 1 large, best of 2; BENCH_ONLY=small (or large): that struct alone (selection.rb).
# With json the large struct has three levels instead of four (124 KB of JSON): pure Ruby writes the
# four-level one in over a second.

require "json"
require_relative "../test_support/accelerator"
require_relative "../test_support/codec_types"
require_relative "../test_support/codec_samples"
require_relative "selection"

ENV["PROTOCOL"] = ARGV.fetch(2, "binary")
Accelerator.load(ARGV.fetch(0))
CodecTypes.load!
Accelerator.exit_unless_structs_run

SMALL_COUNT = Selection.pick(20_000, 4_000)
LARGE_COUNT = Selection.pick(3, 1)
LARGE_LEVELS = ENV["PROTOCOL"] == "json" ? 3 : 4

# Best of ROUNDS: this machine is a VM whose neighbours come and go, and the fastest round is the least disturbed.
ROUNDS = Selection.pick(3, 2)

def measure(count, &block)
  Array.new(ROUNDS) { measure_once(count, &block) }.min_by { |r| r[:seconds] }
end

def measure_once(count)
  GC.start
  gc_before = GC.count
  allocated_before = GC.stat(:total_allocated_objects)
  t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  count.times { |i| yield i }
  seconds = Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0
  { seconds: seconds.round(4), objects_per_op: ((GC.stat(:total_allocated_objects) - allocated_before).to_f / count).round(2),
    gc_runs: GC.count - gc_before }
end

def report(op, count, bytes, result)
  puts JSON.generate({ impl: Accelerator.name, op: op, count: count, bytes: bytes }.merge(result))
  $stdout.flush
end

[["small", -> { CodecSamples.small }, CodecTest::Small, SMALL_COUNT],
 ["large", -> { CodecSamples.large(LARGE_LEVELS) }, CodecTest::Level, LARGE_COUNT]].each do |name, make, klass, count|
  next unless Selection.wanted?(name)

  sample = make.call
  trans = Thrift::MemoryBufferTransport.new
  prot = Accelerator.protocol_class.new(trans)
  sample.write(prot)
  data = trans.read(trans.available)
  check = klass.new
  check.read(Accelerator.protocol_class.new(Thrift::MemoryBufferTransport.new(data)))
  raise "#{name}: round trip failed" unless check == sample

  # Writes go into one transport that is emptied now and then, as a server reusing its buffer would.
  out = Thrift::MemoryBufferTransport.new
  out_prot = Accelerator.protocol_class.new(out)
  2.times { sample.write(out_prot) } # warm-up
  out.reset_buffer
  write = measure(count) do |i|
    sample.write(out_prot)
    out.reset_buffer if (i % 256) == 255
  end
  report("#{name}_write", count, data.bytesize, write)

  input = Thrift::MemoryBufferTransport.new
  in_prot = Accelerator.protocol_class.new(input)
  read = measure(count) do
    input.reset_buffer(data)
    klass.new.read(in_prot)
  end
  report("#{name}_read", count, data.bytesize, read)
end
