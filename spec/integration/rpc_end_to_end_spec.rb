# frozen_string_literal: true

# Whole calls, end to end: a generated client and a Thrift::ThreadedServer (forked) over a UNIX socket, each
# accelerator on both sides (spec/support/runners/rpc_runner.rb): every kind of call on every stack the loaded thrift
# has (framed binary, buffered compact, framed JSON, multiplexed, HeaderTransport on master), a load of calls from
# four threads, faults from a peer that is no Thrift server and to a server from a client that sends garbage. Ours
# against the C accelerator of the same thrift, value for value and exception for exception (class, message, type),
# and against pure Ruby where its structs run on this Ruby (but for the peer's garbage, whose ProtocolException type
# is the pure library's own: the contract is the C accelerator's).
require_relative "../../test_support/codec_types"

RSpec.describe "RPC end to end, differentially" do
  script = File.expand_path("../support/runners/rpc_runner.rb", __dir__)
  pure_own = ["framed binary, a peer: garbage", "buffered compact, a peer: garbage"]
  rpc_idl = File.join(SpecSupport::ROOT, "test_support", "idl", "rpc_test.thrift")

  def check(ours, c, pure, pure_own)
    expect(ours.map(&:first)).to eq(c.map(&:first))
    ours.zip(c).each { |o, r| expect(o).to eq(r) }
    pure&.zip(ours)&.each { |p, o| expect(o).to eq(p) unless pure_own.include?(o[0]) }
    by_name = ours.to_h
    expect(by_name.select { |name, _| name.include?("a load of calls") }.values).to all(eq([:ok, "[0, 0, 0, 0]"]))
    expect(by_name.fetch("framed binary: add")).to eq([:ok, "5"])
    expect(by_name.fetch("buffered compact: a oneway call, then a call")).to eq([:ok, "[\"nil\", 42]"])
    expect(by_name.fetch("multiplexed framed compact: an unknown method"))
      .to eq([:error, "Thrift::ApplicationException", "Unknown function nope", Thrift::ApplicationException::UNKNOWN_METHOD])
    expect(by_name.fetch("framed binary, a peer: a reply cut short")[1]).to eq("Thrift::TransportException")
    by_name
  end

  # A runner that has not answered in this time is killed with its server: the spec fails instead of waiting.
  timeout = 300

  it "calls, answers and raises as the library with its C accelerator (the loaded thrift)" do
    unless CodecTypes.client_code_fits?(rpc_idl, "calc")
      skip "the installed compiler's client code does not fit the loaded Thrift::Client (CodecTypes.client_code_fits?)"
    end
    runs = %w[c ours].to_h { |a| [a, ChildRuby.marshal(script, a, timeout: timeout)] }
    pure = ChildRuby.marshal(script, "pure", timeout: timeout) if Accelerator.pure_structs_work?
    check(runs["ours"], runs["c"], pure, pure_own)
  end

  it "calls, answers and raises as thrift master's library with its C accelerator (THRIFT_MASTER_RB)" do
    env = thrift_master_env
    runs = %w[pure-master c-master ours-master].to_h { |a| [a, ChildRuby.marshal(script, a, env: env, timeout: timeout)] }
    by_name = check(runs["ours-master"], runs["c-master"], runs["pure-master"], pure_own)
    expect(by_name.fetch("header: echo a struct")).to eq(by_name.fetch("framed binary: echo a struct"))
  end
end
