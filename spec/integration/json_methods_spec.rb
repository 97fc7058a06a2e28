# frozen_string_literal: true

require_relative "../support/helpers/call_runs"

# Thrift::JsonProtocol's read and write methods, native (ext/thrift_native/src/protocols/json/), against the
# library's own methods: random call sequences (spec/support/runners/json_methods_runner.rb) written, read back, and read
# back again after one byte is changed, with thrift_native and with the C accelerator (whose MemoryBufferTransport
# is native too, so that the library's methods return what they return over ours). Every call's value or exception
# and the state afterwards (bytes, read position, the reader's held byte, the contexts) must be the same.
# JSON_PROGRAMS sets the number of sequences.
RSpec.describe "JsonProtocol's methods, differentially" do
  runner = File.expand_path("../support/runners/json_methods_runner.rb", __dir__)
  programs = Integer(ENV.fetch("JSON_PROGRAMS", "600"))

  include CallRuns

  def compare(ours, theirs) = compare_runs(ours, theirs, %w[write read mutated-read])

  it "gives the library's values, bytes, exceptions and state on #{programs} random call sequences" do
    ours = ChildRuby.marshal(runner, "ours", 7, programs)
    compare(ours, ChildRuby.marshal(runner, "c", 7, programs))
    # The sequences reach what they are about: calls that succeed and fail, of every kind, reading and writing.
    outcomes = ours.flat_map { |runs| runs.flat_map(&:first) }
    errors = outcomes.select { |o| Outcome.error?(o) }
    expect(outcomes.size).to be > programs * 10
    # An unknown type: NotImplementedError before thrift master, a ProtocolException there.
    unknown_type = SpecSupport.newer?(:json_unknown_type_errors) ? "Thrift::ProtocolException" : "NotImplementedError"
    expect(errors.map { |o| Outcome.class_name(o) }.uniq).to include("Thrift::ProtocolException", unknown_type, "EOFError")
    clean = ours.count { |(write, read, _)| [write, read].none? { |run| run[0].any? { |o| Outcome.error?(o) } } }
    expect(clean).to be > programs / 4
  end

  it "gives thrift master's values, bytes, exceptions and state too (THRIFT_MASTER_RB)" do
    master = ENV.fetch("THRIFT_MASTER_RB", "")
    skip "THRIFT_MASTER_RB (an apache/thrift checkout's lib/rb, its ext built) is not set" if master.empty?
    env = { "THRIFT_MASTER_RB" => master }
    compare(ChildRuby.marshal(runner, "ours-master", 8, programs / 2, env: env),
            ChildRuby.marshal(runner, "c-master", 8, programs / 2, env: env))
  end
end
