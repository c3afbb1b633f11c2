Games provide new challenges for IA in the area of gambling theory .
The Germans have lost the chance of destroying the fleet of British bombardment .
Not all the work of Kafka is reported to the third person .
He said absolutely nothing about war compensation and about the responsibility for starting the war .
The Livadia village no longer has a permanent , stable learning .
Volunteers , Eritreans and equii acceded to Spurius Cassius 's treaty .
History of the Jews of Palestine Peace Conference in 1919 Israel
The machine without rules can be disputed between two or more wrestars .
Costa Blanca is well-known for her bland climate and enjoyed a great deal of sun , which is intense here for 320 days a year .
Cezar 's term of office as Governor has been extended for another five years .
Some of the world 's best known traditional musicians are , and are .
In 1790 the population of France counted 27,9 million inhabitants .
West City Radio has issued its first broadcasting licence to the west of the country since 1995 .
Jackson supported the review of the duty rates , referred to as refraining .
Due to the variety of cultural and natural landscapes in Slovenia , there are more than 40 separate regional kitchens .
is still known as Casa Dobribán .
The result was the loss of the remaining Portuguese territories on the Indian subcontinent .
In the long term , the demographic growth trend was evident , but it was interrupted by hunger , wars and epidemics .
Through the Potsdam Edict of 1685 Frederic William gave asylum to French hughenos .
However , there remains an inequality in spending on education .
This continues to hamper the relaunch of this airport .
Some of the reclaimed operations of Burmei took place in Arkan .
Until 1891 , Valea Mare belonged to the commune of Ulmu , Valea Rusului7
Conditions , spices , play a central role in Chinese kitchenware .
As carried out with fine execution , they recall the elenological period of the pandantive cervids .
His humanitarian films about the people of Nuba are the best known documentation produced by the Slovak King .
Another major airport is Aeroporto Internacional das Lajes on the island of Terceira in the Azores .
When the nature of the German invasion became apparent to British military planners , they began the search for a counter attack .
the thickness of the symbols of the letter light consciousness of
The alternative would have been to trigger a war in the area .
