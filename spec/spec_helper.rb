# frozen_string_literal: true

$LOAD_PATH.unshift File.expand_path("../lib", __dir__)
require "thrift_native"
require "rbconfig"
require "open3"
require_relative "support/custom_transport"
require_relative "support/struct_runs"

module SpecSupport
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

  # Runs Ruby code in a child process (only one thrift_native can be loaded per process) and returns its stdout.
  # `accelerator` is :c (Debian's C extension from ruby-thrift), :ours or :pure.
  def run_ruby(code, accelerator:)
    args = [RbConfig.ruby]
    args += ["-I", File.expand_path("../lib", __dir__)] if accelerator == :ours
    prelude = case accelerator
              when :c then 'require "thrift"; abort "C accelerator not loaded" if defined?(ThriftNative)'
              when :ours then 'require "thrift_native"'
              when :pure then '$LOADED_FEATURES << "thrift_native.so"; require "thrift"'
              end
    out, err, status = Open3.capture3(*args, "-e", "#{prelude}\n#{code}")
    raise "child Ruby failed (#{accelerator}): #{err}" unless status.success?

    out
  end
end

RSpec.configure do |config|
  config.include SpecSupport
  config.disable_monkey_patching!
  config.order = :random
  Kernel.srand config.seed
end
