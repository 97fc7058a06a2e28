# frozen_string_literal: true

# What the specs' stressed examples set GC.stress to. By default 1 (Ruby's gc_stress_no_major flag): a minor GC at
# every allocation, which frees every young object nothing marks, so an unrooted VALUE held by native code across an
# allocation, or a missing write barrier, still fails the example, at a cost that does not grow with the heap (a full
# GC at every allocation of a child Ruby with thrift loaded costs about 25 ms each, and made the suite too slow for
# CI's matrix). THRIFT_NATIVE_GC_STRESS=full asks for a full GC at every allocation (true), as bin/stress does.
module GcStress
  def self.setting
    ENV["THRIFT_NATIVE_GC_STRESS"] == "full" ? true : 1
  end
end
