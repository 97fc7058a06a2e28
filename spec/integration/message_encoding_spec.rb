# frozen_string_literal: true

# The messages of the exceptions the accelerated methods raise, with their encodings (BINARY, as the C accelerator's
# and the transports' Ruby files make them), against the C accelerator of the same thrift
# (spec/support/runners/message_encoding_runner.rb): memory buffer, binary and compact protocols, struct decoding,
# sockets (untimed, and timed on master). `==` ignores the encoding of ASCII-only Strings; these compare its name.
RSpec.describe "Exception messages and their encodings" do
  script = File.expand_path("../support/runners/message_encoding_runner.rb", __dir__)

  def check(ours, c)
    expect(ours.map(&:first)).to eq(c.map(&:first))
    ours.zip(c).each { |o, r| expect(o).to eq(r) }
    expect(ours.map { |o| o[3] }.uniq).to eq(["ASCII-8BIT"])
  end

  it "are the C accelerator's, BINARY (the loaded thrift)" do
    check(ChildRuby.marshal(script, "ours"), ChildRuby.marshal(script, "c"))
  end

  it "are thrift master's C accelerator's, BINARY (THRIFT_MASTER_RB)" do
    env = thrift_master_env
    check(ChildRuby.marshal(script, "ours-master", env: env), ChildRuby.marshal(script, "c-master", env: env))
  end
end
