# frozen_string_literal: true

# IOStreamTransport's and HTTPClientTransport's StringIOs, read and written in place (ext/thrift_native/src/transports/
# string_io.rs, ruby/strio.rs) in the states that must send a read or write to the library's methods: the same values,
# exceptions and StringIO states as with the C accelerator, whose protocols call those methods
# (spec/support/runners/string_io_runner.rb).
RSpec.describe "StringIO transports in place" do
  runner = File.expand_path("../support/runners/string_io_runner.rb", __dir__)

  it "reads StringIOs in their struct on this Ruby (the layout check passed)" do
    expect(ThriftNative.__send__(:strio_access)).to eq("struct")
  end

  it "gives the C accelerator's values, exceptions and StringIO states in every scenario" do
    ours = ChildRuby.marshal(runner, "ours")
    c = ChildRuby.marshal(runner, "c")
    expect(ours.keys).to eq(c.keys)
    ours.each { |scenario, run| expect(run).to eq(c[scenario]), scenario }
    # The scenarios reach what they are about: reads and writes refused by the library's methods, and taken.
    outcomes = ours.values.flat_map(&:first)
    expect(outcomes.select { |o| Outcome.failed?(o) }.map { |o| Outcome.class_name(o) }.uniq).to include("IOError")
    expect(outcomes.count { |o| Outcome.ok?(o) }).to be > 20
  end

  it "gives thrift master's too, an HTTP response's END_OF_FILE with its status among them (THRIFT_MASTER_RB)" do
    master = ENV.fetch("THRIFT_MASTER_RB", "")
    skip "THRIFT_MASTER_RB (an apache/thrift checkout's lib/rb, its ext built) is not set" if master.empty?
    env = { "THRIFT_MASTER_RB" => master }
    ours = ChildRuby.marshal(runner, "ours-master", env: env)
    c = ChildRuby.marshal(runner, "c-master", env: env)
    ours.each { |scenario, run| expect(run).to eq(c[scenario]), scenario }
    messages = ours.values.flat_map(&:first).select { |o| Outcome.failed?(o) }.map { |o| Outcome.message(o) }
    expect(messages).to include(a_string_including("HTTP status code 200"))
  end
end
