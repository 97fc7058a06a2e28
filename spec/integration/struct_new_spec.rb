# frozen_string_literal: true

# `new` of structs and unions (the native Thrift::Struct#initialize and Thrift::Union#initialize) against the library's
# own initialize, run by pure Ruby and by the C accelerator (which leaves initialize to the library), each in its own
# process over the same cases (spec/support/runners/struct_new_runner.rb): the ivars in order, their values, classes
# and frozen state, whether a default was copied, the block's calls, the class's caches, the exceptions.
RSpec.describe "Struct.new and Union.new, differentially" do
  script = File.expand_path("../support/runners/struct_new_runner.rb", __dir__)

  it "makes the same objects and raises the same exceptions as the library's initialize" do
    runs = %w[pure c ours].to_h { |a| [a, ChildRuby.marshal(script, a)] }
    expect(runs["ours"].size).to be > 50
    %w[pure c].each do |reference|
      expect(runs["ours"].map(&:first)).to eq(runs[reference].map(&:first))
      runs["ours"].zip(runs[reference]).each do |(name, ours), (_, theirs)|
        expect(ours).to eq(theirs), "#{name}: ours #{ours.inspect}\n#{reference} #{theirs.inspect}"
      end
    end
    # The cases reach both ways the library answers: objects made and exceptions raised.
    outcomes = runs["ours"].map(&:last)
    expect(outcomes.count { |o| o[0] == :ok }).to be > 20
    expect(outcomes.count { |o| o[0] == :error }).to be > 10
  end
end
