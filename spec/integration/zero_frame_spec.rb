# frozen_string_literal: true

# Zero-length frames through a FramedTransport (spec/support/runners/zero_frame_runner.rb), over a memory buffer and
# a socket, by the transport's methods, each protocol's and a struct's `read`: the same values, exceptions and
# transport state as the loaded library's FramedTransport with the C accelerator, as the library takes them (an empty
# frame taken as it is), and, given THRIFT-6155's refusal (thrift master after 2026-08-24), as it refuses them. Never
# a hang: each child has a minute.
RSpec.describe "Zero-length frames" do
  runner = File.expand_path("../support/runners/zero_frame_runner.rb", __dir__)
  run = ->(*args) { ChildRuby.marshal(runner, *args, timeout: 60) }

  it "are taken as the loaded library takes them" do
    ours = run.call("ours")
    expect(ThriftNative::THRIFT_FEATURES[:zero_frames_refused]).to be(false)
    expect(ours).to eq(run.call("c"))
    expect(ours.size).to be > 30
  end

  it "are refused with the library's TransportException where it refuses them (THRIFT-6155), found by the probe" do
    ours = run.call("ours", "refusing")
    c = run.call("c", "refusing")
    # From a socket a frame's header is read into the spent @rbuf, which a failed refill leaves empty (README,
    # deliberate differences) where the library's still holds the frame before.
    refusal = ->(o) { Outcome.failed?(o) && Outcome.message(o) == "Zero-length frame received" }
    c.each do |name, (outcome, state)|
      outcomes = outcome.first.is_a?(Array) ? outcome : [outcome]
      state[1] = "".b if name.start_with?("socket") && refusal.call(outcomes.last)
    end
    expect(ours).to eq(c)
    refused = ours.values.flat_map { |o, _| o.first.is_a?(Array) ? o : [o] }.select(&refusal)
    expect(refused.map { |o| [Outcome.class_name(o), Outcome.type(o)] }.uniq).to eq([["Thrift::TransportException", 4]])
    expect(refused.size).to be > 20
  end
end
