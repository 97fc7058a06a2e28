# frozen_string_literal: true

# What the benchmark drivers (bench/run.rb, every table; bench/quick.rb, the headline rows) share: which accelerators
# are measured and how they are labelled, one suite run per accelerator in a child process, rounds that take the
# accelerators in turn, the tables and the JSON they save, progress with an estimate of the time left, and sections
# whose failure is reported while the run goes on (the driver exits non-zero at the end).
#
# What it reads from the environment: THRIFT_MASTER_RB (a "C master" column beside the loaded thrift's C accelerator,
# and the HeaderTransport table under master's library), THRIFT_MASTER_COMPILER (master's library in the RPC table
# too), THRIFT_C_VERSION (the loaded thrift's version, for labels; default 0.14), BENCH_RESULTS (where the JSON goes;
# default bench/results), BENCH_YJIT=0 (no +YJIT columns on a Ruby built with YJIT), BENCH_RPC_CPU (the CPU list the
# RPC client and server share; "" for none).

require "json"
require "time"
require "fileutils"
require_relative "../test_support/child_ruby"

module Bench
  SECONDS = ARGV.fetch(0, "0.5")
  YJIT = defined?(RubyVM::YJIT) && ENV.fetch("BENCH_YJIT", "1") != "0"
  # With thrift master itself on the load path (bin/matrix bench-4.0-master), "c" is master's C accelerator already.
  MASTER_LOADED = !ENV["THRIFT_MASTER_RB"].nil? &&
                  ENV.fetch("RUBYLIB", "").split(File::PATH_SEPARATOR).include?(File.join(ENV["THRIFT_MASTER_RB"], "lib"))
  MASTER_BESIDE = !ENV["THRIFT_MASTER_RB"].nil? && !MASTER_LOADED
  BASE_LABELS = { "pure" => "pure Ruby", "c" => "C #{ENV.fetch("THRIFT_C_VERSION", "0.14")}", "c-master" => "C master",
                  "ours" => "thrift_native", "pure-master" => "pure Ruby (master)",
                  "ours-master" => "thrift_native (master)", "floor" => "floor" }.freeze
  LABELS = BASE_LABELS.merge(BASE_LABELS.to_h { |i, label| ["#{i}+yjit", "#{label} +YJIT"] }).freeze
  # The RPC benchmark's client and server share one CPU: a process woken on an idle other core waits about 60 us on
  # this VM, more than a small call takes.
  RPC_CPU = (ENV.fetch("BENCH_RPC_CPU", "0") unless ENV["BENCH_RPC_CPU"] == "" || !system("taskset -c 0 true", err: File::NULL))
  RESULTS_DIR = File.expand_path(ENV.fetch("BENCH_RESULTS", File.join(__dir__, "results")))
  PROTOCOLS = %w[binary compact].freeze

  module_function

  # Each accelerator, then (on a YJIT Ruby) each again under YJIT: "ours+yjit" is "ours" in a `ruby --yjit` child.
  def with_yjit(impls) = (impls + (YJIT ? impls.map { |i| "#{i}+yjit" } : [])).freeze

  # One suite (a script of this folder and its arguments) once per accelerator: { op => { impl => row } }. `env`:
  # what the children see besides this process's environment.
  def run_suite(script, *args, impls:, cpu: nil, env: {})
    results = Hash.new { |h, k| h[k] = {} }
    impls.each do |impl|
      Progress.step("#{script.delete_suffix(".rb")} #{args.join(" ")}".strip, LABELS[impl], impl) do
        yjit = impl.end_with?("+yjit") ? ["--yjit"] : []
        ChildRuby.each_line(*yjit, File.expand_path(script, __dir__), impl.delete_suffix("+yjit"), SECONDS, *args,
                            cpu: cpu, env: env) do |line|
          row = JSON.parse(line)
          results[row.fetch("op")][impl] = row
        end
      end
    end
    results
  end

  # run_suite `rounds` times, the accelerators taken in turn each round, keeping each measurement's best round by
  # `key` (lower is better, or higher with `higher: true`): the VM's speed drifts over minutes, and an accelerator
  # measured a minute after another would carry the drift into the comparison. Each child also keeps the best of its
  # own repetitions, against shorter disturbances.
  def run_rounds(script, *args, key:, impls:, rounds: 3, higher: false, cpu: nil, env: {})
    better = higher ? ->(y, x) { y[key] > x[key] } : ->(y, x) { y[key] < x[key] }
    Array.new(rounds) { run_suite(script, *args, impls: impls, cpu: cpu, env: env) }.reduce do |best, round|
      best.merge(round) { |_op, a, b| a.merge(b) { |_impl, x, y| better.call(y, x) ? y : x } }
    end
  end

  def save(name, results)
    FileUtils.mkdir_p(RESULTS_DIR)
    path = File.join(RESULTS_DIR, "#{name}.json")
    File.write(path, JSON.pretty_generate(
      recorded_at: Time.now.utc.iso8601, ruby: RUBY_DESCRIPTION, seconds_per_measurement: SECONDS.to_f, results: results
    ))
    puts "\nsaved #{path}"
  end

  # Runs a section (one table, or one benchmark script); a failure is reported and the run goes on. `failed` tells
  # which failed, for the driver's exit status.
  def section(name)
    yield
  rescue StandardError => e
    failures << name
    warn "\n#{name}: FAILED (#{e.class}: #{e.message.lines.first(12).join.strip}); going on with the other tables"
    nil
  end

  def failures = (@failures ||= [])

  # Ends the run: the failed sections named, and the exit status (1 if any failed).
  def finish
    Progress.done
    if failures.empty?
      exit 0
    else
      warn "\n#{failures.size} section(s) failed: #{failures.join("; ")}"
      exit 1
    end
  end
end

# Progress on stderr, one line per child run, with the time so far and an estimate of the time left: each planned
# step carries an estimate of its seconds (this 2-core machine's, per script and kind of accelerator), scaled by how
# the steps done so far compared with their estimates.
module Progress
  @planned = 0.0 # seconds estimated for every step of the plan
  @done_estimate = 0.0 # the estimates of the steps done
  @started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  @steps_done = 0
  @steps = 0
  @estimates = {}

  class << self
    # estimates: { step name => { "pure" => s, "other" => s } }; steps: [[name, impl], ...] in the order they run.
    def plan(estimates, steps)
      @estimates = estimates
      @steps = steps.size
      @planned = steps.sum { |name, impl| estimate(name, impl) }
    end

    # Adds steps found on the way (a section whose size was not known when the plan was made).
    def extend_plan(name, impl, count = 1)
      @steps += count
      @planned += count * estimate(name, impl)
    end

    def estimate(name, impl)
      by_kind = @estimates.fetch(name) { @estimates.find { |key, _| name.start_with?(key) }&.last || {} }
      kind = impl.to_s.start_with?("pure") ? "pure" : "other"
      by_kind.fetch(kind, by_kind.fetch("other", 5.0)).to_f * (impl.to_s.end_with?("+yjit") ? 0.8 : 1.0)
    end

    def step(name, label, impl)
      @steps += 1 if @steps_done >= @steps
      $stderr.print format("[%<n>2d/%<of>2d %<at>s, %<left>s] %<name>s, %<label>s ", n: @steps_done + 1, of: @steps,
                                                                                     at: clock(elapsed), left: left, name: name, label: label)
      $stderr.flush
      t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      yield
    ensure
      @steps_done += 1
      @done_estimate += estimate(name, impl)
      $stderr.puts format("%.1f s", Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0) if t0
    end

    def done
      $stderr.puts "done in #{clock(elapsed)}"
    end

    def elapsed = Process.clock_gettime(Process::CLOCK_MONOTONIC) - @started

    def left
      return "time left unknown" unless @planned.positive?

      pace = @done_estimate.positive? ? elapsed / @done_estimate : 1.0
      "~#{clock([(@planned - @done_estimate) * pace, 0].max)} left"
    end

    def clock(seconds) = format("%d:%02d", seconds.to_i / 60, seconds.to_i % 60)
  end
end
