# frozen_string_literal: true

# What differs between the Rubies of the matrix and that specs expect, read off the running Ruby itself rather than
# written down for one of them.
module RubyFacts
  class << self
    # The RangeError message of Ruby's own NUM2INT for `n` (Integer#round converts its digits argument so).
    def int_range_message(n)
      1.round(n)
      raise ArgumentError, "#{n} fits a C int"
    rescue RangeError => e
      e.message
    end

    # The RangeError message of Ruby's NUM2LL for a Bignum beyond 64 bits: the template of NUM2LONG's ("bignum too big
    # to convert into `long'", 'long' from Ruby 3.4 on), which Array.new shows, for the type `long long`.
    def long_long_range_message
      Array.new(2**64)
    rescue RangeError => e
      e.message.sub(/long(?=.\z)/, "long long")
    end

    # GC.verify_compaction_references, its heap grown first: `expand_heap:` from Ruby 3.2 on, `double_heap:` before
    # (3.2 on warns that that name is deprecated).
    def verify_compaction
      grow = GC.method(:verify_compaction_references).parameters.include?([:key, :expand_heap]) ? :expand_heap : :double_heap
      GC.verify_compaction_references(grow => true, toward: :empty)
    end

    # The objects a two-element Set allocates beyond itself: the Hash that set.rb's Set keeps (Ruby 3.1-3.4), none for
    # Ruby 4.0's core Set.
    def objects_inside_a_set
      counts = Array.new(2) do # the first round warms up the call site
        before = GC.stat(:total_allocated_objects)
        Set.new
        GC.stat(:total_allocated_objects) - before
      end
      counts.last - 1
    end
  end
end
