# frozen_string_literal: true

# Timing of a batch of calls for the per-call benchmarks (primitives.rb, struct_new.rb): `batch` returns how many
# calls it made; it is run (after one warm-up run) until `seconds` have passed. Answers [ns per call, objects per call].
def measure_batches(batch, seconds)
  calls = 0
  allocated = 0
  elapsed = 0.0
  batch.call # warm-up
  while elapsed < seconds
    before = GC.stat(:total_allocated_objects)
    t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    calls += batch.call
    elapsed += Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0
    allocated += GC.stat(:total_allocated_objects) - before
  end
  [elapsed * 1e9 / calls, allocated.to_f / calls]
end
