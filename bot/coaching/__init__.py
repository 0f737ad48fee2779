"""Domain rules: goals, streaks, profile answers, coach-client links, exercise assignment."""
