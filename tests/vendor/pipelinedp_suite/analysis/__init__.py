# Copyright 2022 OpenMined.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

from analysis.data_structures import MultiParameterConfiguration
from analysis.data_structures import UtilityAnalysisOptions
from analysis.metrics import PerPartitionMetrics
from analysis.metrics import SumMetrics
from analysis.metrics import UtilityReport
from analysis.parameter_tuning import tune
from analysis.parameter_tuning import MinimizingFunction
from analysis.parameter_tuning import ParametersToTune
from analysis.parameter_tuning import TuneOptions
from analysis.parameter_tuning import TuneResult
from analysis.pre_aggregation import preaggregate
from analysis.utility_analysis import perform_utility_analysis
