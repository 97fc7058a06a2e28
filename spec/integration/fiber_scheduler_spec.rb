# frozen_string_literal: true

# Calls under a Fiber scheduler (Fiber.set_scheduler), as async and Falcon run them: a call waiting on its socket must
# let other fibers run, with thrift_native as with pure Ruby and the C accelerator. Each accelerator in a child process
# (spec/support/runners/fiber_scheduler_runner.rb) runs a generated client (test_support/idl/rpc_test.thrift) and a
# fiber-per-connection server under our own scheduler (spec/support/fixtures/fiber_scheduler.rb), four connections at
# once, framed and buffered, binary and compact. The handler pauses in `sleep`, which waits through the scheduler.
#
# Shown: every answer right, and the same with each accelerator; the calls overlapped: every connection's first call
# entered the handler before any call left it. That is certain when fibers interleave (the four first requests are all
# read in one turn of the loop, before the first pause can end) and impossible when a wait blocks the thread, as the
# negative control shows with a handler that sleeps outside the scheduler. And a 2 MB echo each way over small socket
# buffers, whose writes wait for the peer through the scheduler. A socket wait that blocked the thread would hang the
# run (client and server share the thread): the runner's watchdog, then the child's timeout, fail it. Nothing here
# depends on wall-clock time: only the order of events and counts of waits.
require "io/wait"
require_relative "../../test_support/accelerator"
require_relative "../../test_support/codec_types"
require_relative "../support/fixtures/fiber_scheduler"

RSpec.describe "Calls under a Fiber scheduler" do
  script = File.expand_path("../support/runners/fiber_scheduler_runner.rb", __dir__)
  rpc_idl = File.join(SpecSupport::ROOT, "test_support", "idl", "rpc_test.thrift")
  # The runner's: CONNECTIONS clients making CALLS `add(connection, 10 * call)` calls each, on these stacks.
  connections = 4
  calls = 3
  stacks = ["framed binary", "framed compact", "buffered binary", "buffered compact"]
  blocking_control = "framed binary, the handler blocking the thread"
  large = 2 * 1024 * 1024
  large_runs = ["framed binary", "buffered compact"].map { |stack| "#{stack}, #{large} bytes each way" }
  added = (0...connections).to_h { |c| [c, (1..calls).map { |call| c + (10 * call) }] }
  # A run takes about two seconds; one that has not answered in this time is killed, and the example fails.
  timeout = 120
  # Each accelerator's child runs once, for whichever of its examples comes first.
  runs = Hash.new { |h, accelerator| h[accelerator] = ChildRuby.marshal(script, accelerator, timeout: timeout) }

  # The connections whose calls entered the handler before any call left it.
  def entered_before_first_exit(events)
    events.take_while { |kind, *| kind == :enter }.map { |_, connection, _| connection }.uniq.sort
  end

  # The most calls inside the handler at one time.
  def most_at_once(events)
    inside = 0
    events.map { |kind, *| inside += kind == :enter ? 1 : -1 }.max
  end

  def runnable!(rpc_idl)
    return if CodecTypes.client_code_fits?(rpc_idl, "calc")

    skip "the installed compiler's client code does not fit the loaded Thrift::Client (CodecTypes.client_code_fits?)"
  end

  it "has a scheduler of our own whose fibers interleave: sleep, IO waits, a Queue, a Thread's value" do
    log = []
    waited = nil
    worker = Thread.new do # a thread of its own: a scheduler is set per thread, and this one ends with it
      scheduler = FiberScheduler.new
      Fiber.set_scheduler(scheduler)
      queue = Thread::Queue.new
      reader, writer = IO.pipe
      silent, unwritten = IO.pipe
      Fiber.schedule { log << [:popped, queue.pop] } # before anything is pushed: block, then unblock
      Fiber.schedule { log << [:read, reader.read(5)] } # before anything is written: io_wait
      Fiber.schedule { log << [:timed_out, silent.wait_readable(0.01)] } # io_wait's timeout
      Fiber.schedule { log << [:slept, sleep(0.01)] }
      Fiber.schedule { log << [:thread, Thread.new { :done }.value] } # unblocked from the other thread
      Fiber.schedule { queue << 1 && writer.write("hello") }
      Fiber.set_scheduler(nil)
      waited = scheduler.waited
      [reader, writer, silent, unwritten].each(&:close)
    end
    finished = worker.join(30)
    worker.kill unless finished
    expect(finished).to be_truthy
    expect(log).to contain_exactly([:popped, 1], [:read, "hello"], [:timed_out, nil], [:slept, 0], [:thread, :done])
    expect(waited.keys).to include(:block, :readable, :sleep)
  end

  if RUBY_VERSION >= "4.0"
    # Ruby 4.0 on: a Ruby before it has no fiber_interrupt hook, and this example no meaning.
    it "ends a fiber's wait on an IO that another fiber closes with IOError (Ruby 4.0's fiber_interrupt)" do
      log = []
      worker = Thread.new do
        Fiber.set_scheduler(FiberScheduler.new)
        reader, writer = IO.pipe
        Fiber.schedule do
          reader.read(1)
          log << :read
        rescue IOError => e
          log << [:interrupted, e.class]
        end
        Fiber.schedule { reader.close }
        Fiber.set_scheduler(nil)
        writer.close
      end
      finished = worker.join(30)
      worker.kill unless finished
      expect(finished).to be_truthy
      expect(log).to eq([[:interrupted, IOError]])
    end
  end

  # Pure Ruby too where this thrift's pure-Ruby structs run on this Ruby (before thrift 0.20 or so, not on 3.2 on).
  let(:accelerators) { Accelerator.pure_structs_work? ? %w[pure c ours] : %w[c ours] }

  it "overlaps the calls of #{connections} connections on every stack, each waiting on its socket through the scheduler, with each accelerator" do
    runnable!(rpc_idl)
    accelerators.product(stacks).each do |accelerator, stack|
      run = runs[accelerator].fetch(stack)
      label = [accelerator, stack]
      expect([label, run[:answers]]).to eq([label, added])
      # Every connection's first call was in the handler while all the others were.
      expect([label, entered_before_first_exit(run[:events])]).to eq([label, (0...connections).to_a])
      expect([label, most_at_once(run[:events])]).to eq([label, connections])
      # Each pause went through the scheduler, and so did every client's wait for each reply.
      expect([label, run[:waited].fetch(:sleep)]).to eq([label, connections * calls])
      expect([label, run[:waited].fetch(:readable)]).to match([label, be >= connections * calls])
    end
  end

  it "does not overlap them with a handler that blocks the thread (the negative control), with each accelerator" do
    runnable!(rpc_idl)
    accelerators.each do |accelerator|
      run = runs[accelerator].fetch(blocking_control)
      expect([accelerator, run[:answers]]).to eq([accelerator, added])
      expect([accelerator, run[:waited].key?(:sleep)]).to eq([accelerator, false]) # the pause did bypass the scheduler
      expect([accelerator, most_at_once(run[:events])]).to eq([accelerator, 1])
      # One connection's call alone (which one depends on the order the server's fibers were woken in).
      expect([accelerator, entered_before_first_exit(run[:events]).size]).to eq([accelerator, 1])
    end
  end

  it "echoes #{large} bytes each way on every connection, its writes waiting for the peer through the scheduler, with each accelerator" do
    runnable!(rpc_idl)
    accelerators.product(large_runs).each do |accelerator, name|
      run = runs[accelerator].fetch(name)
      label = [accelerator, name]
      expect([label, run[:answers]]).to eq([label, (0...connections).to_h { |c| [c, [true, c, large]] }])
      expect([label, run[:waited].fetch(:writable, 0)]).to match([label, be_positive])
    end
  end

  it "answers alike with every accelerator (ours, the C accelerator, pure Ruby where its structs run)" do
    runnable!(rpc_idl)
    answers = ->(accelerator) { runs[accelerator].transform_values { |run| run[:answers] } }
    (accelerators - ["ours"]).each { |reference| expect(answers.call("ours")).to eq(answers.call(reference)) }
  end
end
