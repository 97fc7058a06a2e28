# frozen_string_literal: true

# Both sides of every behaviour in which thrift versions' C accelerators differ, whatever the thrift installed: this
# process runs the unit specs under the loaded thrift's own contract, and this example runs them again in a child
# Ruby under thrift master's (spec/support/newer_contract.rb gives the loaded library the traces the probes look for).
RSpec.describe "The loaded thrift's contract" do
  it "lets the unit specs pass under thrift master's contract too" do
    newer = File.join(SpecSupport::ROOT, "spec", "support", "newer_contract.rb")
    specs = Dir[File.join(SpecSupport::ROOT, "spec", "unit", "**", "*_spec.rb")].sort
    out, err, ok = ChildRuby.capture("-r", newer, "-S", "rspec", "--format", "progress", *specs, chdir: SpecSupport::ROOT)
    expect([ok, out[/^\d+ examples, \d+ failures?.*$/]]).to eq([true, out[/^\d+ examples/] + ", 0 failures"]), out + err
    expect(out[/^(\d+) examples/, 1].to_i).to be > 300
  end
end
