# frozen_string_literal: true

# Thrift::MultiplexedProcessor#process (native in rpc/multiplexed.rs) against the library's own, run by pure Ruby and
# by the C accelerator (which leaves it to the library), each in its own process over the same cases
# (spec/support/runners/multiplexed_runner.rb): what `process` answers or raises, which service was asked with what
# protocol and message header, the reply's bytes; names with no colon, several, a trailing one, broken or binary
# bytes, a long name, odd values from a protocol double, a subclass.
RSpec.describe "Thrift::MultiplexedProcessor, differentially" do
  script = File.expand_path("../support/runners/multiplexed_runner.rb", __dir__)
  # The memory buffer's EOFError is the C accelerator's own message (pure Ruby's differs).
  c_errors = ["binary: the header cut in the name"]

  def compare(ours, theirs, label, except: [])
    expect(ours.map(&:first)).to eq(theirs.map(&:first))
    ours.zip(theirs).each do |o, t|
      next if except.include?(o[0])

      expect(o).to eq(t), "#{o[0]}:\n ours #{o.inspect}\n #{label} #{t.inspect}"
    end
  end

  def check(runs, (pure, c, ours), c_errors)
    expect(runs[ours].size).to be >= 25
    compare(runs[ours], runs[c], c)
    compare(runs[ours], runs[pure], pure, except: c_errors) if runs.key?(pure)
    by_name = runs[ours].to_h { |r| [r[0], r] }
    expect(by_name.fetch("binary: a call")[2]).to eq(['["Calc", "Thrift::StoredMessageProtocol", ["ping", 1, 7], [:@protocol, :@message_begin]]'])
    expect(by_name.fetch("binary: an unknown service")[1][0..2])
      .to eq([:error, "Thrift::Exception",
              "Service name not found: Nope. Did you forget to call Thrift::MultiplexedProcessor#register_processor?"])
    by_name
  end

  let(:references) { Accelerator.pure_structs_work? ? %w[pure c ours] : %w[c ours] }

  it "processes, answers and raises as the library's MultiplexedProcessor (the loaded thrift)" do
    runs = references.to_h { |a| [a, ChildRuby.marshal(script, a)] }
    by_name = check(runs, %w[pure c ours], c_errors)
    two = by_name.fetch("binary: two colons")[2]
    # Before master, split(':') keeps the second part only; master's split(":", 2) keeps the rest.
    master = Thrift::MultiplexedProcessor.method_defined?(:register_default)
    expect(two).to eq([%(["Calc", "Thrift::StoredMessageProtocol", [#{master ? '"a:b"' : '"a"'}, 1, 7], [:@protocol, :@message_begin]])])
  end

  it "processes, answers and raises as thrift master's MultiplexedProcessor (THRIFT_MASTER_RB)" do
    env = thrift_master_env
    trio = %w[pure-master c-master ours-master]
    runs = trio.to_h { |a| [a, ChildRuby.marshal(script, a, env: env)] }
    by_name = check(runs, trio, c_errors)
    expect(by_name.fetch("binary: no colon, with a default processor")[2])
      .to eq(['["default", "Thrift::StoredMessageProtocol", ["ping", 1, 7], [:@protocol, :@message_begin]]'])
    expect(by_name.fetch("binary: two colons")[2]).to eq(['["Calc", "Thrift::StoredMessageProtocol", ["a:b", 1, 7], [:@protocol, :@message_begin]]'])
  end

  it "gives the same outcomes under GC.stress" do
    stressed = ChildRuby.marshal(script, "ours", env: { "GC_STRESS" => "1" })
    compare(stressed, ChildRuby.marshal(script, "c"), "c")
  end
end
