# frozen_string_literal: true

require "open3"
require "rbconfig"

# The one way specs and benchmarks run Ruby in a child process: only one accelerator can be loaded per process, so
# each side of a comparison runs in a child of its own.
module ChildRuby
  ACCELERATOR = File.expand_path("accelerator.rb", __dir__)

  class Failed < StandardError; end

  module_function

  # `ruby *args`: [stdout, stderr, success?]. A child still running after `timeout` seconds is killed (and has not
  # succeeded).
  def capture(*args, env: {}, input: "", chdir: nil, binmode: false, timeout: nil)
    options = chdir ? { chdir: chdir } : {}
    unless timeout
      out, err, status = Open3.capture3(env, RbConfig.ruby, *args, stdin_data: input, binmode: binmode, **options)
      return [out, err, status.success?]
    end
    # A process group of its own, killed whole: a child's own children (a forked server) hold its pipes open.
    Open3.popen3(env, RbConfig.ruby, *args, pgroup: true, **options) do |stdin, stdout, stderr, wait|
      [stdin, stdout, stderr].each(&:binmode) if binmode
      out = Thread.new { stdout.read }
      err = Thread.new { stderr.read }
      stdin.write(input)
      stdin.close
      unless wait.join(timeout)
        Process.kill(:KILL, -wait.pid)
        wait.join
        return [out.value, "#{err.value}\nchild Ruby killed: still running after #{timeout} s", false]
      end
      [out.value, err.value, wait.value.success?]
    end
  end

  # `ruby *args`'s stdout; a child that fails or crashes raises Failed, with its stderr.
  def run(*args, **options)
    out, err, ok = capture(*args, **options)
    raise Failed, "child Ruby (#{args.first(4).join(" ")}) failed: #{err}" unless ok

    out
  end

  # `code` with one accelerator loaded (`Accelerator.load`): its stdout.
  def eval(code, accelerator:, **options)
    run("-r", ACCELERATOR, "-e", "Accelerator.load(#{accelerator.to_s.inspect})\n#{code}", **options)
  end

  # A script that reads Marshal on stdin and answers Marshal on stdout.
  def marshal(script, *args, input: nil, env: {}, timeout: nil)
    stdin = input.nil? ? "" : Marshal.dump(input)
    Marshal.load(run(script, *args.map(&:to_s), env: env, input: stdin, binmode: true, timeout: timeout))
  end

  # `ruby *args`, each line of its stdout yielded as it comes (a benchmark's progress); a failure raises. `cpu`: the
  # CPU list (taskset's) the child and its own children run on.
  def each_line(*args, env: {}, cpu: nil)
    command = cpu ? ["taskset", "-c", cpu, RbConfig.ruby] : [RbConfig.ruby]
    Open3.popen2(env, *command, *args) do |_stdin, out, wait|
      out.each_line { |line| yield line }
      raise Failed, "child Ruby (#{args.first(4).join(" ")}) failed" unless wait.value.success?
    end
  end
end
