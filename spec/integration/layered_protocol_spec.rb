# frozen_string_literal: true

require_relative "../support/runners/differential_run"

# Both protocols over FramedTransport and BufferedTransport, differentially: the random sequences of
# differential_spec.rb, written through the transport and flushed, then read back (frames and buffers refilled
# mid-sequence). thrift_native's protocols read and write the transports' buffers in place; the C accelerator calls
# their Ruby methods for every value. Results, exceptions and what is left unread must be the same.
RSpec.describe "The protocols over FramedTransport and BufferedTransport, differentially" do
  include DifferentialRun

  # The writes, a flush, then the reads (and, for compact, the fresh protocol it reads with).
  def flushed(ops)
    split = ops.index { |name, *| !name.to_s.start_with?("write_") }
    ops[0...split] + [[:flush]] + ops[split..]
  end

  {
    "binary" => ->(seed) { DifferentialRun.binary_ops(seed, 120) },
    "compact" => ->(seed) { DifferentialRun.compact_ops(seed, 90) }
  }.each do |protocol, ops_for|
    %w[framed framed-pipe framed-subclass buffered-pipe].each do |transport|
      it "#{protocol} over #{transport}: the C accelerator's results and leftovers" do
        [7, 8, 9].each do |seed|
          ops = flushed(ops_for.call(seed))
          c = run_ops("c", ops, transport, protocol)
          ours = run_ops("ours", ops, transport, protocol)
          expect(ours).to eq(c), "seed #{seed}"
          expect(ours[:results].count { |o| Outcome.ok?(o) }).to eq(ops.size - 1)
          expect(Outcome.failed?(ours[:results].last)).to be(true)
        end
      end
    end
  end
end
