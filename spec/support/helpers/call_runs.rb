# frozen_string_literal: true

# What the specs of a protocol's methods called one by one share (json_methods_spec.rb, binary_methods_spec.rb): two
# accelerators' runs of the same programs compared run by run, the first call that differs named.
module CallRuns
  # ours, theirs: [[run, ...] per program], a run being [[outcome of each call], state afterwards]; labels: each
  # run's name.
  def compare_runs(ours, theirs, labels)
    expect(ours.size).to eq(theirs.size)
    ours.zip(theirs).each_with_index do |(mine, other), i|
      labels.each_with_index do |label, k|
        next if mine[k] == other[k]

        calls = mine[k][0].zip(other[k][0])
        j = calls.index { |a, b| a != b }
        detail = j ? "call #{j}: ours #{calls[j][0].inspect[0, 300]}, theirs #{calls[j][1].inspect[0, 300]}" : "state"
        expect(mine[k]).to eq(other[k]), "program #{i}, #{label}, #{detail}"
      end
    end
  end
end
