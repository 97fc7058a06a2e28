# frozen_string_literal: true

# How the call benchmarks (rpc.rb, http.rb) count: `client.call(n)` over a window of `seconds` (at least 3 calls),
# after one warm-up call: calls per second, and the objects allocated per call in this process.
module CallRate
  module_function

  def measure(client, call, seconds)
    client.public_send(call, 1) # warm-up
    calls = 0
    before = GC.stat(:total_allocated_objects)
    t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    elapsed = 0.0
    while elapsed < seconds || calls < 3
      client.public_send(call, calls)
      calls += 1
      elapsed = Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0
    end
    { calls_per_second: (calls / elapsed).round(1),
      objects_per_call: ((GC.stat(:total_allocated_objects) - before).to_f / calls).round(1) }
  end
end
