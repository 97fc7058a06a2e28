# frozen_string_literal: true

require_relative "../support/helpers/call_runs"

# Thrift::BinaryProtocol's methods, native (ext/thrift_native/src/protocols/plain_binary.rs), against the library's
# own: random call sequences (spec/support/runners/binary_methods_runner.rb) written, read back, and read back again
# after one byte is changed or the bytes are cut short, through every transport whose bytes are read or written in
# place, with thrift_native and with the C accelerator (whose MemoryBufferTransport is native too, so that the
# library's methods return what they return over ours). Every call's value or exception and the state afterwards
# (bytes written, read position, what is left) must be the same. BINARY_PROGRAMS sets the number of sequences.
RSpec.describe "BinaryProtocol's methods, differentially" do
  runner = File.expand_path("../support/runners/binary_methods_runner.rb", __dir__)
  programs = Integer(ENV.fetch("BINARY_PROGRAMS", "500"))

  include CallRuns

  def compare(ours, theirs) = compare_runs(ours, theirs, %w[write read damaged-read])

  it "gives the library's values, bytes, exceptions and state on #{programs} random call sequences" do
    ours = ChildRuby.marshal(runner, "ours", 11, programs)
    compare(ours, ChildRuby.marshal(runner, "c", 11, programs))
    # The sequences reach what they are about: calls that succeed and fail, reading and writing.
    outcomes = ours.flat_map { |runs| runs.flat_map(&:first) }
    failed = outcomes.select { |o| Outcome.failed?(o) }
    expect(outcomes.size).to be > programs * 10
    expect(failed.map { |o| Outcome.class_name(o) }.uniq).to include("RangeError", "TypeError")
    expect(failed.size).to be < outcomes.size / 4
  end

  it "gives thrift master's values, bytes, exceptions and state too (THRIFT_MASTER_RB)" do
    master = ENV.fetch("THRIFT_MASTER_RB", "")
    skip "THRIFT_MASTER_RB (an apache/thrift checkout's lib/rb, its ext built) is not set" if master.empty?
    env = { "THRIFT_MASTER_RB" => master }
    compare(ChildRuby.marshal(runner, "ours-master", 12, programs / 2, env: env),
            ChildRuby.marshal(runner, "c-master", 12, programs / 2, env: env))
  end
end
