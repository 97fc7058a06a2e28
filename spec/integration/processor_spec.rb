# frozen_string_literal: true

# Thrift::Processor's methods (native in rpc/processor.rs) against the library's own, run by pure Ruby and by the C
# accelerator (which leaves the processor to the library), each in its own process over the same cases
# (spec/support/runners/processor_runner.rb): what `process` answers or raises, every call on the recording protocol
# double in order (the error replies' bytes included), what the handler was asked, the lines logged. Against pure
# Ruby the struct-level calls are left out (its structs go through BaseProtocol's helpers), and so are the case whose
# logged line is a struct decoder's message and the errors the C accelerator raises otherwise. Then messages on real
# protocols (binary and compact, a memory buffer or frames, old-style headers), whose headers ours reads natively:
# the reply's bytes.
RSpec.describe "Thrift::Processor, differentially" do
  # Pure Ruby too, where the loaded thrift's pure-Ruby structs work on this Ruby (before thrift 0.20 or so they test
  # `is_a? Fixnum`, which Ruby 3.2 removed).
  let(:references) { Accelerator.pure_structs_work? ? %w[pure c ours] : %w[c ours] }
  script = File.expand_path("../support/runners/processor_runner.rb", __dir__)
  # (:reply: the bytes a real protocol wrote, in the cases on real protocols.)
  message_level = %i[write_message_begin write_message_end read_message_begin read_message_end trans flush skip reply]
  codec_dependent = ["a damaged argument struct"]

  def compare(ours, theirs, label, only: nil, except: [])
    expect(ours.map(&:first)).to eq(theirs.map(&:first))
    ours.zip(theirs).each do |o, t|
      next if except.include?(o[0])

      o, t = [o, t].map { |r| r.dup.tap { |x| x[2] = x[2].select { |e| only.include?(e.first) } if only } }
      expect(o).to eq(t), "#{o[0]}:\n ours #{o.inspect}\n #{label} #{t.inspect}"
    end
  end

  def check(runs, (pure, c, ours), message_level, codec_dependent)
    expect(runs[ours].size).to be >= 19
    compare(runs[ours], runs[c], c)
    if runs.key?(pure)
      c_errors = runs[ours].map(&:first).select { |name| name.end_with?("(C's errors)") }
      compare(runs[ours], runs[pure], pure, only: message_level, except: codec_dependent + c_errors)
    end
    by_name = runs[ours].to_h { |r| [r[0], r] }
    expect(by_name.fetch("a handler that raises")[4]).to eq([[:debug, "Internal error : boom", true]])
    by_name
  end

  it "processes, answers, logs and raises as the library's processor (the loaded thrift)" do
    trio = %w[pure c ours]
    runs = references.to_h { |a| [a, ChildRuby.marshal(script, a)] }
    by_name = check(runs, trio, message_level, codec_dependent)
    expect(by_name.fetch("an unknown method")[2]).to include([:write_string, "\"Unknown function nope\""])
  end

  it "processes, answers, logs and raises as thrift master's processor (THRIFT_MASTER_RB)" do
    env = thrift_master_env
    trio = %w[pure-master c-master ours-master]
    runs = trio.to_h { |a| [a, ChildRuby.marshal(script, a, env: env)] }
    by_name = check(runs, trio, message_level, codec_dependent)
    # THRIFT-6146: a message that is neither CALL nor ONEWAY is refused before the method is looked up.
    expect(by_name.fetch("a REPLY sent to the server")[1]).to eq([:ok, "false"])
    expect(by_name.fetch("a REPLY sent to the server")[2]).to include([:write_string, "\"Invalid message type 2 for function ping\""])
  end

  it "gives the same outcomes under GC.stress" do
    stressed = ChildRuby.marshal(script, "ours", env: { "GC_STRESS" => "1" })
    compare(stressed, ChildRuby.marshal(script, "c"), "c")
  end
end
