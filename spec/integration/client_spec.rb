# frozen_string_literal: true

# Thrift::Client's methods (native in rpc/client.rs) against the library's own, run by pure Ruby and by the C
# accelerator (which leaves the client to the library), each in its own process over the same cases
# (spec/support/runners/client_runner.rb): answers, exceptions and messages, the client's ivars afterwards
# (sequence ids, pending sequence ids), and every call on the recording protocol and transport doubles, in order;
# then calls on real protocols (binary and compact, a memory buffer or frames), whose replies ours reads natively.
# Against pure Ruby the struct-level calls are left out (its structs write through BaseProtocol#write_field).
RSpec.describe "Thrift::Client, differentially" do
  # Pure Ruby too, where the loaded thrift's pure-Ruby structs work on this Ruby (before thrift 0.20 or so they test
  # `is_a? Fixnum`, which Ruby 3.2 removed).
  let(:references) { Accelerator.pure_structs_work? ? %w[pure c ours] : %w[c ours] }
  script = File.expand_path("../support/runners/client_runner.rb", __dir__)
  message_level = %i[write_message_begin write_message_end read_message_begin read_message_end trans flush close]

  def compare(ours, theirs, label, &only)
    expect(ours.map(&:first)).to eq(theirs.map(&:first))
    ours.zip(theirs).each do |o, t|
      o, t = [o, t].map { |name, outcome, log, ivars| [name, outcome, only ? log.select(&only) : log, ivars] }
      expect(o).to eq(t), "#{o[0]}:\n ours #{o.inspect}\n #{label} #{t.inspect}"
    end
  end

  def check(runs, ours, c, pure, message_level)
    expect(runs[ours].size).to be >= 30
    compare(runs[ours], runs[c], c)
    if pure
      # Cases on real protocols whose errors are the C accelerator's own (the runner marks them) are not pure Ruby's.
      ours_runs, pure_runs = [runs[ours], runs[pure]].map { |r| r.reject { |name, *| name.end_with?("(C's errors)") } }
      compare(ours_runs, pure_runs, pure) { |entry| message_level.include?(entry.first) }
    end
    outcomes = runs[ours].map { |r| r[1] }
    expect(outcomes.count { |o| o[0] == :ok }).to be > 10
    expect(outcomes.map { |o| o[1] }.uniq).to include("IOError", "NoMethodError", "Thrift::ApplicationException")
  end

  it "calls, answers and raises as the library's client (the loaded thrift)" do
    runs = references.to_h { |a| [a, ChildRuby.marshal(script, a)] }
    check(runs, "ours", "c", runs.key?("pure") && "pure", message_level)
  end

  it "calls, answers and raises as thrift master's client (THRIFT_MASTER_RB)" do
    env = thrift_master_env
    runs = %w[pure-master c-master ours-master].to_h { |a| [a, ChildRuby.marshal(script, a, env: env)] }
    check(runs, "ours-master", "c-master", "pure-master", message_level)
    ivars = runs["ours-master"].to_h { |r| [r[0], r[3]] }
    expect(ivars.fetch("sequence ids: after the largest")).to include([:@seqid, "-2147483646"])
  end

  it "gives the same outcomes under GC.stress" do
    stressed = ChildRuby.marshal(script, "ours", env: { "GC_STRESS" => "1" })
    compare(stressed, ChildRuby.marshal(script, "c"), "c")
  end
end
