# frozen_string_literal: true

# spec/unit: one class's behaviour, in this process. spec/integration: comparisons with pure Ruby and the installed
# C accelerator in child processes, loading, packaging.
#
# spec/support/helpers: what examples call in this process (shared contexts, facts of the running Ruby).
# spec/support/runners: the scripts a child process runs with one accelerator loaded (ARGV and Marshal in, Marshal
# out), the modules that start them, and outcome.rb: the one encoding of a call's value or exception, which the
# runners write and the examples read.
# spec/support/fixtures: transports and IOs made for the specs, THeader frames built by hand.
# test_support (at the root, shared with bench/): loading an accelerator in a child, the codec test types and samples.

$LOAD_PATH.unshift File.expand_path("../lib", __dir__)
require "thrift_native"
require_relative "../test_support/child_ruby"
require_relative "../test_support/gc_stress"
require_relative "support/fixtures/custom_transport"
require_relative "support/helpers/ruby_facts"
require_relative "support/runners/outcome"
require_relative "support/runners/struct_runs"

module SpecSupport
  ROOT = File.expand_path("..", __dir__)
  LIB = File.join(ROOT, "lib")

  # Whether the loaded thrift calls for the newer side of a behaviour its versions' C accelerators differ in
  # (ThriftNative::THRIFT_FEATURES; ext/thrift_native/src/thrift/contract.rs). Examples of both sides exist; spec/integration/contract_spec.rb
  # runs the unit specs again under thrift master's contract, so both run whatever the thrift.
  def self.newer?(feature) = ThriftNative::THRIFT_FEATURES.fetch(feature)

  # The refusals thrift_native keeps on every version where older C accelerators were unsafe (ARCHITECTURE.md, "The
  # contract", kept whatever the version): a varint longer than 10 bytes (their loop had no end) and a compact byte string
  # declared longer than INT32_MAX (asked of `read_all`, which a transport may allocate ahead of the bytes). Where
  # ours is one of them, the loaded thrift's C accelerator may have done anything.
  SAFE_REFUSALS = ["Variable-length int over 10 bytes.", "Binary size limit exceeded"].freeze

  def self.safe_refusal?(ours, c)
    ours != c && Outcome.error?(ours) && Outcome.class_name(ours) == "Thrift::ProtocolException" &&
      SAFE_REFUSALS.include?(Outcome.message(ours))
  end

  # Zlib.gunzip of `bytes` as bytes. Ruby 3.1's and 3.2's zlib skip the gzip header by characters, not bytes, when
  # the string is tagged UTF-8 (ruby/zlib#55, fixed in the zlib 3.1 of Ruby 3.3): a header whose mtime bytes happen
  # to form a multibyte character, some seconds of the day, then fails with "invalid stored block lengths".
  def gunzip(bytes)
    Zlib.gunzip(bytes.b)
  end

  # Objects allocated by one run of the block, measured after a first (warm-up) run has filled Ruby's call caches.
  def allocations
    yield
    before = allocated_objects
    yield
    allocated_objects - before
  end

  # One call site for both readings: a call site's first call allocates its call cache.
  def allocated_objects
    GC.stat(:total_allocated_objects)
  end

  # Objects allocated by `n` calls of the block, after a warm-up round. Spelled out without nested blocks:
  # Integer#times, and a `yield` from inside a nested block, cost an object of their own.
  def allocations_per(n, &operation)
    i = 0
    while i < n
      operation.call
      i += 1
    end
    before = allocated_objects
    i = 0
    while i < n
      operation.call
      i += 1
    end
    allocated_objects - before
  end

  # The environment that gives a child process thrift master's library (THRIFT_MASTER_RB, which bin/test sets); the
  # example is left pending without it.
  def thrift_master_env
    master = ENV.fetch("THRIFT_MASTER_RB", "")
    skip "THRIFT_MASTER_RB (an apache/thrift checkout's lib/rb, its ext built) is not set" if master.empty?
    { "THRIFT_MASTER_RB" => master }
  end

  # Objects allocated by `n` decodes from `bytes` (the block reads from `trans`), not counting the Ruby library's
  # MemoryBufferTransport#reset_buffer that refills `trans` each time: it allocates on Ruby 3.3, not on 3.1.
  def read_allocations(n, trans, bytes, &read)
    allocations_per(n) { trans.reset_buffer(bytes); read.call } - allocations_per(n) { trans.reset_buffer(bytes) }
  end
end

RSpec.configure do |config|
  config.include SpecSupport
  config.disable_monkey_patching!
  config.order = :random
  Kernel.srand config.seed
end
